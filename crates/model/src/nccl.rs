//! NCCL's own enumerations, with the numbers NCCL prints in its logs.

/// An NCCL operation as named in the per-collective log line (`AllReduce: opCount ...`).
/// `SendRecv` never appears in logs; it is the fused kernel of grouped Send/Recv.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpType {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    Send,
    Recv,
    SendRecv,
    AllToAll,
    Gather,
    Scatter,
}

impl OpType {
    pub const ALL: [OpType; 11] = [
        OpType::AllReduce,
        OpType::AllGather,
        OpType::ReduceScatter,
        OpType::Broadcast,
        OpType::Reduce,
        OpType::Send,
        OpType::Recv,
        OpType::SendRecv,
        OpType::AllToAll,
        OpType::Gather,
        OpType::Scatter,
    ];

    /// The operations the contract's `ops_by_type` always lists (with 0 when absent).
    pub const CONTRACT: [OpType; 7] = [
        OpType::AllReduce,
        OpType::AllGather,
        OpType::ReduceScatter,
        OpType::Broadcast,
        OpType::Reduce,
        OpType::Send,
        OpType::Recv,
    ];

    /// NCCL's own spelling, as in logs and kernel names.
    pub fn name(self) -> &'static str {
        match self {
            OpType::AllReduce => "AllReduce",
            OpType::AllGather => "AllGather",
            OpType::ReduceScatter => "ReduceScatter",
            OpType::Broadcast => "Broadcast",
            OpType::Reduce => "Reduce",
            OpType::Send => "Send",
            OpType::Recv => "Recv",
            OpType::SendRecv => "SendRecv",
            OpType::AllToAll => "AllToAll",
            OpType::Gather => "Gather",
            OpType::Scatter => "Scatter",
        }
    }

    pub fn from_name(s: &str) -> Option<OpType> {
        OpType::ALL.iter().copied().find(|op| op.name() == s)
    }

    /// Point-to-point operations (peer in the `root` field).
    pub fn is_p2p(self) -> bool {
        matches!(self, OpType::Send | OpType::Recv | OpType::SendRecv)
    }
}

impl std::fmt::Display for OpType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `ncclDataType_t`, numbered as NCCL prints it (`datatype 7`).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataType {
    Int8,
    Uint8,
    Int32,
    Uint32,
    Int64,
    Uint64,
    Float16,
    Float32,
    Float64,
    Bfloat16,
    Float8e4m3,
    Float8e5m2,
}

impl DataType {
    pub const ALL: [DataType; 12] = [
        DataType::Int8,
        DataType::Uint8,
        DataType::Int32,
        DataType::Uint32,
        DataType::Int64,
        DataType::Uint64,
        DataType::Float16,
        DataType::Float32,
        DataType::Float64,
        DataType::Bfloat16,
        DataType::Float8e4m3,
        DataType::Float8e5m2,
    ];

    pub fn from_code(code: u32) -> Option<DataType> {
        DataType::ALL.get(code as usize).copied()
    }

    pub fn code(self) -> u32 {
        self as u32
    }

    pub fn size_bytes(self) -> u64 {
        match self {
            DataType::Int8 | DataType::Uint8 | DataType::Float8e4m3 | DataType::Float8e5m2 => 1,
            DataType::Float16 | DataType::Bfloat16 => 2,
            DataType::Int32 | DataType::Uint32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::Uint64 | DataType::Float64 => 8,
        }
    }

    /// NCCL's `ncclDataType_t` name without the prefix (`float32`).
    pub fn name(self) -> &'static str {
        match self {
            DataType::Int8 => "int8",
            DataType::Uint8 => "uint8",
            DataType::Int32 => "int32",
            DataType::Uint32 => "uint32",
            DataType::Int64 => "int64",
            DataType::Uint64 => "uint64",
            DataType::Float16 => "float16",
            DataType::Float32 => "float32",
            DataType::Float64 => "float64",
            DataType::Bfloat16 => "bfloat16",
            DataType::Float8e4m3 => "float8e4m3",
            DataType::Float8e5m2 => "float8e5m2",
        }
    }
}

/// `ncclRedOp_t` (`op 0`). Codes past `Avg` are user-defined (`ncclRedOpCreatePreMulSum`).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RedOp {
    Sum,
    Prod,
    Max,
    Min,
    Avg,
    /// PreMulSum and other user-created operations.
    Custom(u32),
}

impl RedOp {
    pub fn from_code(code: u32) -> RedOp {
        match code {
            0 => RedOp::Sum,
            1 => RedOp::Prod,
            2 => RedOp::Max,
            3 => RedOp::Min,
            4 => RedOp::Avg,
            n => RedOp::Custom(n),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RedOp::Sum => "sum",
            RedOp::Prod => "prod",
            RedOp::Max => "max",
            RedOp::Min => "min",
            RedOp::Avg => "avg",
            RedOp::Custom(_) => "custom",
        }
    }
}

/// NCCL algorithm, numbered as the 2.20–2.23 tuning lines print it (`Algo 1`).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Algo {
    Tree,
    Ring,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
}

impl Algo {
    pub const ALL: [Algo; 7] = [
        Algo::Tree,
        Algo::Ring,
        Algo::CollNetDirect,
        Algo::CollNetChain,
        Algo::Nvls,
        Algo::NvlsTree,
        Algo::Pat,
    ];

    pub fn from_code(code: u32) -> Option<Algo> {
        Algo::ALL.get(code as usize).copied()
    }

    /// The upper-case name NCCL 2.24+ prints (`Algo RING`) and kernel names carry.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Tree => "TREE",
            Algo::Ring => "RING",
            Algo::CollNetDirect => "COLLNET_DIRECT",
            Algo::CollNetChain => "COLLNET_CHAIN",
            Algo::Nvls => "NVLS",
            Algo::NvlsTree => "NVLS_TREE",
            Algo::Pat => "PAT",
        }
    }

    pub fn from_name(s: &str) -> Option<Algo> {
        let up = s.to_ascii_uppercase();
        Algo::ALL
            .iter()
            .copied()
            .find(|a| a.name() == up)
            .or(match up.as_str() {
                "COLLNETDIRECT" => Some(Algo::CollNetDirect),
                "COLLNETCHAIN" => Some(Algo::CollNetChain),
                "NVLSTREE" => Some(Algo::NvlsTree),
                _ => None,
            })
    }
}

/// NCCL protocol, numbered as the 2.20–2.23 tuning lines print it (`proto 2`).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Proto {
    LL,
    LL128,
    Simple,
}

impl Proto {
    pub fn from_code(code: u32) -> Option<Proto> {
        match code {
            0 => Some(Proto::LL),
            1 => Some(Proto::LL128),
            2 => Some(Proto::Simple),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Proto::LL => "LL",
            Proto::LL128 => "LL128",
            Proto::Simple => "SIMPLE",
        }
    }

    pub fn from_name(s: &str) -> Option<Proto> {
        match s.to_ascii_uppercase().as_str() {
            "LL" => Some(Proto::LL),
            "LL128" => Some(Proto::LL128),
            "SIMPLE" => Some(Proto::Simple),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datatype_codes_follow_nccl_enum() {
        assert_eq!(DataType::from_code(7), Some(DataType::Float32));
        assert_eq!(DataType::from_code(9), Some(DataType::Bfloat16));
        assert_eq!(DataType::from_code(11).map(|d| d.size_bytes()), Some(1));
        assert_eq!(DataType::from_code(12), None);
    }

    #[test]
    fn op_names_round_trip() {
        for op in OpType::ALL {
            assert_eq!(OpType::from_name(op.name()), Some(op));
        }
    }
}
