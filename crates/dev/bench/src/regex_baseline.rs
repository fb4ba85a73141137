//! The reference parser of the parse benchmark: one regular expression per line, with capture
//! groups, as the thesis' NCCL Trace Profiler reads a log (§4.1: a pattern for the per-collective
//! line, another for the tuning line that follows it). Written here in Rust with the `regex`
//! crate, so it is a fair (and much faster than Python) baseline; it keeps the same fields our
//! parser keeps for an operation.

use regex::Regex;

/// What the baseline keeps of one operation.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineOp {
    pub host: String,
    pub pid: u32,
    pub op: String,
    pub op_count: u64,
    pub count: u64,
    pub datatype: u32,
    pub red_op: u32,
    pub root: i64,
    pub comm: u64,
    pub nranks: u32,
    pub stream: u64,
    pub algo: Option<String>,
    pub proto: Option<String>,
}

pub struct RegexBaseline {
    coll: Regex,
    tuning: Regex,
}

impl Default for RegexBaseline {
    fn default() -> Self {
        RegexBaseline {
            coll: Regex::new(
                r"(\S+):(\d+):(\d+) \[(\d+)\] NCCL INFO (\w+): opCount ([0-9a-fA-F]+) sendbuff (0x[0-9a-fA-F]+|\(nil\)) recvbuff (0x[0-9a-fA-F]+|\(nil\)) count (\d+) datatype (\d+) op (\d+) root (-?\d+) comm (0x[0-9a-fA-F]+) \[nranks=(\d+)\] stream (0x[0-9a-fA-F]+)",
            )
            .expect("the collective pattern compiles"),
            tuning: Regex::new(r"NCCL INFO .*?(?:algorithm|Algo) (\w+).*?(?:protocol|proto) (\w+)")
                .expect("the tuning pattern compiles"),
        }
    }
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or(0)
}

impl RegexBaseline {
    /// Every operation of `text`, line by line.
    pub fn parse(&self, text: &str) -> Vec<BaselineOp> {
        let mut ops: Vec<BaselineOp> = Vec::new();
        for line in text.lines() {
            if let Some(c) = self.coll.captures(line) {
                ops.push(BaselineOp {
                    host: c[1].to_string(),
                    pid: c[2].parse().unwrap_or(0),
                    op: c[5].to_string(),
                    op_count: hex(&c[6]),
                    count: c[9].parse().unwrap_or(0),
                    datatype: c[10].parse().unwrap_or(0),
                    red_op: c[11].parse().unwrap_or(0),
                    root: c[12].parse().unwrap_or(0),
                    comm: hex(&c[13]),
                    nranks: c[14].parse().unwrap_or(0),
                    stream: hex(&c[15]),
                    algo: None,
                    proto: None,
                });
            } else if let Some(t) = self.tuning.captures(line) {
                if let Some(last) = ops.last_mut() {
                    last.algo = Some(t[1].to_string());
                    last.proto = Some(t[2].to_string());
                }
            }
        }
        ops
    }
}
