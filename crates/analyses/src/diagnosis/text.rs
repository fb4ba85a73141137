//! How findings word things: operations, rank lists, times.

use super::index::Signature;
use model::{DataType, OpType};

/// `AllReduce (count 1048576, float32, sum)`: what a member called, with what must agree.
pub(crate) fn call(s: &Signature) -> String {
    let mut parts = vec![
        format!("count {}", s.count),
        datatype(s.datatype(), s.datatype_code),
    ];
    if let Some(r) = s.red_op {
        parts.push(r.name().to_string());
    }
    if let Some(root) = s.root {
        parts.push(format!("root {root}"));
    }
    format!("{} ({})", s.op.name(), parts.join(", "))
}

pub(crate) fn datatype(d: Option<DataType>, code: u32) -> String {
    match d {
        Some(d) => d.name().to_string(),
        None => format!("datatype {code}"),
    }
}

pub(crate) fn op_name(op: OpType) -> String {
    op.name().to_string()
}

/// opCount as NCCL prints it.
pub(crate) fn hex(v: u64) -> String {
    format!("{v:x}")
}

/// `rank 3`, `ranks 0 and 2`, `ranks 0, 1 and 5`; `an unknown rank` for none.
pub(crate) fn ranks(r: &[u32]) -> String {
    match r {
        [] => "a rank of unknown number".into(),
        [one] => format!("rank {one}"),
        _ => format!("ranks {}", list(r.iter().map(u32::to_string).collect())),
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn list(items: Vec<String>) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// `2024-11-21 00:53:20.123456` (UTC as the parser read the stamp).
pub(crate) fn time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000) / 1_000;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{frac:06}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// H. Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_lists() {
        assert_eq!(
            time(1_732_150_400_000_000_000),
            "2024-11-21 00:53:20.000000"
        );
        assert_eq!(time(1_000_000), "1970-01-01 00:00:00.001000");
        assert_eq!(ranks(&[]), "a rank of unknown number");
        assert_eq!(ranks(&[3]), "rank 3");
        assert_eq!(ranks(&[0, 2]), "ranks 0 and 2");
        assert_eq!(ranks(&[0, 1, 5]), "ranks 0, 1 and 5");
        assert_eq!(hex(652), "28c");
    }
}
