//! NCCL's own enumerations, with the numbers NCCL prints in its logs.

/// An NCCL operation as named in the per-collective log line (`AllReduce: opCount ...`).
/// `SendRecv` never appears in logs; it is the fused kernel of grouped Send/Recv.
///
/// `Other` is an operation this build has no variant for that a log printed in the same line
/// shape (NCCL 2.28's `AlltoAll`, RCCL's `AllToAllPivot`, whatever comes next): its name is
/// interned process-wide ([`OpName`]), so the value stays `Copy` and two bytes. Ordering puts
/// the named variants first, in declaration order, then the others by name; serde writes the
/// name, so two processes (the page's workers) agree on it whatever order they interned in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    Other(OpName),
}

impl OpType {
    /// The operations this build names; [`OpType::Other`] holds the rest.
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
            OpType::Other(n) => n.as_str(),
        }
    }

    /// The operation of a known name, or of one [`OpType::intern`] has seen; `None` otherwise
    /// (a lookup never adds a name).
    pub fn from_name(s: &str) -> Option<OpType> {
        OpType::ALL
            .iter()
            .copied()
            .find(|op| op.name() == s)
            .or_else(|| OpName::lookup(s).map(OpType::Other))
    }

    /// [`OpType::from_name`] ignoring ASCII case (for what users type: `op:alltoall`).
    pub fn from_name_ignore_case(s: &str) -> Option<OpType> {
        OpType::ALL
            .iter()
            .copied()
            .find(|op| op.name().eq_ignore_ascii_case(s))
            .or_else(|| OpName::lookup_ignore_case(s).map(OpType::Other))
    }

    /// The operation a log line names: a known one, or `Other` for a name of NCCL's shape
    /// (an ASCII identifier starting with an upper-case letter, at most [`OpName::MAX_LEN`]
    /// bytes). `None` for anything else, or once [`OpName::CAPACITY`] other names are taken.
    pub fn intern(s: &str) -> Option<OpType> {
        OpType::ALL
            .iter()
            .copied()
            .find(|op| op.name() == s)
            .or_else(|| OpName::intern(s).map(OpType::Other))
    }

    /// Point-to-point operations (peer in the `root` field).
    pub fn is_p2p(self) -> bool {
        matches!(self, OpType::Send | OpType::Recv | OpType::SendRecv)
    }

    /// A small number that tells operations apart within this process (hashing, packing): the
    /// named ones their place in [`OpType::ALL`], the others past it. Not stable across
    /// processes (names are interned in the order met): never write it out.
    pub fn code(self) -> u16 {
        match self {
            OpType::Other(n) => OpType::ALL.len() as u16 + u16::from(n.0),
            op => u16::from(op.named_index().unwrap_or(0)),
        }
    }

    /// A named operation's place in [`OpType::ALL`] (its declaration order); `None` for
    /// [`OpType::Other`]. A match, not a search of `ALL`: maps keyed by operation compare
    /// keys millions of times in an analysis.
    fn named_index(self) -> Option<u8> {
        Some(match self {
            OpType::AllReduce => 0,
            OpType::AllGather => 1,
            OpType::ReduceScatter => 2,
            OpType::Broadcast => 3,
            OpType::Reduce => 4,
            OpType::Send => 5,
            OpType::Recv => 6,
            OpType::SendRecv => 7,
            OpType::AllToAll => 8,
            OpType::Gather => 9,
            OpType::Scatter => 10,
            OpType::Other(_) => return None,
        })
    }
}

impl PartialOrd for OpType {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Named operations in declaration order, then the others by name (not by their interned
/// index, which differs between processes: the page's workers must agree).
impl Ord for OpType {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self.named_index(), other.named_index()) {
            (Some(a), Some(b)) => a.cmp(&b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => match (self, other) {
                (OpType::Other(a), OpType::Other(b)) if a == b => Ordering::Equal,
                (OpType::Other(a), OpType::Other(b)) => a.as_str().cmp(b.as_str()),
                _ => Ordering::Equal,
            },
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for OpType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for OpType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        OpType::intern(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("not an operation name: {name:?}")))
    }
}

/// The name of an [`OpType::Other`]: an index into a process-wide, append-only table of names
/// (at most [`OpName::CAPACITY`], each leaked once: a log cannot make it grow without bound).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpName(u8);

static OP_NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

impl OpName {
    /// How many other names one process keeps; names past it are not operations.
    pub const CAPACITY: usize = 255;
    /// The longest name taken (NCCL's longest is `ReduceScatter`, 13 bytes).
    pub const MAX_LEN: usize = 32;

    fn names() -> std::sync::MutexGuard<'static, Vec<&'static str>> {
        // A panic while holding the lock cannot leave the list half-written (push is the only
        // change), so a poisoned lock's list is still good.
        OP_NAMES.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `s` has the shape of an NCCL operation name.
    pub fn is_valid(s: &str) -> bool {
        let b = s.as_bytes();
        (2..=Self::MAX_LEN).contains(&b.len())
            && b.first().is_some_and(u8::is_ascii_uppercase)
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
    }

    fn lookup(s: &str) -> Option<OpName> {
        let names = Self::names();
        let i = names.iter().position(|n| *n == s)?;
        Some(OpName(u8::try_from(i).ok()?))
    }

    fn lookup_ignore_case(s: &str) -> Option<OpName> {
        let names = Self::names();
        let i = names.iter().position(|n| n.eq_ignore_ascii_case(s))?;
        Some(OpName(u8::try_from(i).ok()?))
    }

    fn intern(s: &str) -> Option<OpName> {
        if !Self::is_valid(s) {
            return None;
        }
        let mut names = Self::names();
        if let Some(i) = names.iter().position(|n| *n == s) {
            return Some(OpName(u8::try_from(i).ok()?));
        }
        if names.len() >= Self::CAPACITY {
            return None;
        }
        names.push(Box::leak(s.to_string().into_boxed_str()));
        Some(OpName(u8::try_from(names.len() - 1).ok()?))
    }

    pub fn as_str(self) -> &'static str {
        Self::names()
            .get(usize::from(self.0))
            .copied()
            .unwrap_or("Other")
    }
}

impl std::fmt::Debug for OpName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
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
            assert_eq!(OpType::intern(op.name()), Some(op));
        }
    }

    /// The named operations order and code as their place in `ALL`, before every other one.
    #[test]
    fn named_operations_order_as_declared() {
        let other = OpType::intern("AaaOrderTestOp").unwrap();
        for (i, op) in OpType::ALL.into_iter().enumerate() {
            assert_eq!(op.code(), i as u16, "{op:?}");
            for (j, later) in OpType::ALL.into_iter().enumerate() {
                assert_eq!(op.cmp(&later), i.cmp(&j), "{op:?} against {later:?}");
            }
            assert_eq!(op.cmp(&other), std::cmp::Ordering::Less, "{op:?} first");
            assert_eq!(other.cmp(&op), std::cmp::Ordering::Greater, "{op:?} first");
        }
        assert_eq!(other.cmp(&other), std::cmp::Ordering::Equal);
    }

    /// A newer operation's name becomes `Other` with that name: looked up only once interned,
    /// the same value every time, ordered after the named ones and among others by name.
    #[test]
    fn other_operations_keep_their_names() {
        assert_eq!(OpType::from_name("ZetaTestOp"), None);
        let z = OpType::intern("ZetaTestOp").unwrap();
        let a = OpType::intern("AlphaTestOp").unwrap();
        assert!(matches!(z, OpType::Other(_)));
        assert_eq!(z.name(), "ZetaTestOp");
        assert_eq!(OpType::from_name("ZetaTestOp"), Some(z));
        assert_eq!(OpType::intern("ZetaTestOp"), Some(z));
        assert_ne!(a, z);
        let mut v = vec![z, OpType::Recv, a, OpType::AllReduce];
        v.sort();
        assert_eq!(v, [OpType::AllReduce, OpType::Recv, a, z]);
        for bad in ["", "x", "lowerCase", "Has space", "Dots.", &"A".repeat(33)] {
            assert_eq!(OpType::intern(bad), None, "{bad:?}");
        }
    }
}
