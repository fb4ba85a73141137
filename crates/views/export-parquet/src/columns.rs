//! The Parquet columns and where each reads its value in a [`KernelRecord`]: a record field,
//! or one of the enriched fields in `args` (named as in [`export::fields`]).

use export::fields::*;
use export::KernelRecord;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int32,
    Int64,
    Double,
    Bool,
    Text,
}

#[derive(Debug, Clone, Copy)]
enum Source {
    Rank,
    Start,
    End,
    Name,
    Matched,
    /// An enriched field, as JSON.
    Arg(&'static str),
    /// `Op Count (Hex)` as a number.
    OpCountHex,
}

pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub optional: bool,
    source: Source,
}

const fn col(name: &'static str, kind: Kind, optional: bool, source: Source) -> Column {
    Column {
        name,
        kind,
        optional,
        source,
    }
}

use Kind::*;
use Source::*;

/// Every column, in file order.
pub const COLUMNS: &[Column] = &[
    col("global_rank", Int32, false, Rank),
    col("host", Text, false, Arg(HOST)),
    col("pid", Int64, false, Arg(PROCESS_ID)),
    col("name", Text, false, Name),
    col("kernel", Text, false, Arg(CUDA_KERNEL)),
    col("start_ns", Int64, false, Start),
    col("end_ns", Int64, false, End),
    col("own_clock_start_ns", Int64, false, Arg(OWN_CLOCK_START_NS)),
    col("own_clock_end_ns", Int64, false, Arg(OWN_CLOCK_END_NS)),
    col("stream", Int64, false, Arg(CUDA_STREAM_ID)),
    col("correlation_id", Int64, false, Arg(CUDA_CORRELATION_ID)),
    col("matched", Bool, false, Matched),
    col("confidence", Double, true, Arg(CONFIDENCE)),
    col("comm_id", Text, true, Arg(COMMUNICATOR_ID)),
    col("comm_ptr", Text, true, Arg(COMMUNICATOR_PTR)),
    col("comm_size", Int32, true, Arg(COMMUNICATOR_SIZE)),
    col("parallelism", Text, true, Arg(PARALLELISM_TYPE)),
    col("op_count", Int64, true, OpCountHex),
    col("element_count", Int64, true, Arg(ELEMENT_COUNT)),
    col("data_type", Text, true, Arg(DATA_TYPE)),
    col("reduction_op", Text, true, Arg(REDUCTION_OP)),
    col("message_bytes", Int64, true, Arg(MESSAGE_SIZE_BYTES)),
    col("algorithm", Text, true, Arg(NCCL_ALGORITHM)),
    col("protocol", Text, true, Arg(PROTOCOL)),
    col("channels", Int32, true, Arg(CHANNELS)),
    col("symmetric_kernel", Text, true, Arg(SYMMETRIC_KERNEL)),
    col("algo_bw_gbps", Double, true, Arg(ALGO_BW)),
    col("bus_bw_gbps", Double, true, Arg(BUS_BW)),
    col("bus_factor", Double, true, Arg(BUS_FACTOR)),
    col(
        "theoretical_bus_bw_gbps",
        Double,
        true,
        Arg(THEORETICAL_BUS_BW),
    ),
    col("efficiency", Double, true, Arg(EFFICIENCY)),
    col("bus_efficiency", Double, true, Arg(BUS_EFFICIENCY)),
    col("bottleneck", Text, true, Arg(BOTTLENECK)),
];

impl Column {
    /// The column's line in a Parquet message type.
    pub fn parquet_type(&self) -> String {
        let repetition = if self.optional {
            "OPTIONAL"
        } else {
            "REQUIRED"
        };
        let ty = match self.kind {
            Int32 => "INT32",
            Int64 => "INT64",
            Double => "DOUBLE",
            Bool => "BOOLEAN",
            Text => "BYTE_ARRAY",
        };
        let logical = if self.kind == Text { " (UTF8)" } else { "" };
        format!("{repetition} {ty} {}{logical}", self.name)
    }

    fn arg<'a>(&self, r: &'a KernelRecord) -> Option<&'a Value> {
        match self.source {
            Arg(key) => r.args.get(key).filter(|v| !v.is_null()),
            _ => None,
        }
    }

    /// The value of an integer column (required ones read 0 when absent, which the records'
    /// builder never leaves them).
    pub fn int(&self, r: &KernelRecord) -> Option<i64> {
        let v = match self.source {
            Rank => Some(i64::from(r.rank)),
            Start => Some(r.start_ns),
            End => Some(r.end_ns),
            OpCountHex => self
                .arg_of(r, OP_COUNT_HEX)
                .and_then(|v| v.as_str())
                .and_then(|s| i64::from_str_radix(s, 16).ok()),
            _ => self.arg(r).and_then(|v| v.as_i64()),
        };
        self.required(v, 0)
    }

    pub fn float(&self, r: &KernelRecord) -> Option<f64> {
        self.required(self.arg(r).and_then(|v| v.as_f64()), 0.0)
    }

    pub fn boolean(&self, r: &KernelRecord) -> Option<bool> {
        let v = match self.source {
            Matched => Some(r.matched),
            _ => self.arg(r).and_then(|v| v.as_bool()),
        };
        self.required(v, false)
    }

    pub fn text(&self, r: &KernelRecord) -> Option<String> {
        let v = match self.source {
            Name => Some(r.name.clone()),
            _ => self.arg(r).map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
        };
        self.required(v, String::new())
    }

    fn arg_of<'a>(&self, r: &'a KernelRecord, key: &str) -> Option<&'a Value> {
        r.args.get(key).filter(|v| !v.is_null())
    }

    /// A required column never writes a null.
    fn required<T>(&self, v: Option<T>, default: T) -> Option<T> {
        if self.optional {
            v
        } else {
            Some(v.unwrap_or(default))
        }
    }
}
