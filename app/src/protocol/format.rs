//! How figures are written for people, the same in the worker (which formats the view data) and
//! on the page.

/// A byte count for people: `1.50 MB` (decimal units, as NCCL's tools print them).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

/// `x` with `digits` significant digits, trailing zeros kept off (`12.3`, `0.000188`, `1500`).
pub fn significant(x: f64, digits: u32) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x.is_finite() {
            "0".into()
        } else {
            "—".into()
        };
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
    let text = format!("{x:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A bandwidth given in GB/s, in the unit its magnitude calls for: `45.2 GB/s`, `188 MB/s`,
/// `7.5 KB/s` (decimal units, as NCCL's tools print them).
pub fn human_rate(gbps: f64) -> String {
    if !gbps.is_finite() {
        return "—".into();
    }
    const UNITS: [(f64, &str); 5] = [
        (1e3, "TB/s"),
        (1.0, "GB/s"),
        (1e-3, "MB/s"),
        (1e-6, "KB/s"),
        (1e-9, "B/s"),
    ];
    let (scale, unit) = UNITS
        .iter()
        .copied()
        .find(|(s, _)| gbps.abs() >= *s)
        .unwrap_or(UNITS[UNITS.len() - 1]);
    format!("{} {unit}", significant(gbps / scale, 3))
}

/// A duration in ns, in the unit its magnitude calls for: `850 ns`, `12.4 µs`, `3.21 ms`, `1.5 s`.
pub fn human_duration(ns: f64) -> String {
    if !ns.is_finite() {
        return "—".into();
    }
    let (scale, unit) = match ns.abs() {
        a if a >= 1e9 => (1e9, "s"),
        a if a >= 1e6 => (1e6, "ms"),
        a if a >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    };
    format!("{} {unit}", significant(ns / scale, 3))
}

/// A fraction as a whole percentage (`0.823` → `82 %`), one decimal under 10 % (`4.5 %`).
pub fn percent(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "—".into();
    }
    let p = fraction * 100.0;
    if p.abs() < 10.0 && p != 0.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.0} %")
    }
}

/// A long id (a communicator's hash, a pointer) shortened to its head and tail
/// (`0x7f3c…9a10`); short ones as they are. The page shows the whole in a title.
pub fn short_id(id: &str) -> String {
    const KEEP_HEAD: usize = 6;
    const KEEP_TAIL: usize = 4;
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= KEEP_HEAD + KEEP_TAIL + 2 {
        return id.to_string();
    }
    let head: String = chars[..KEEP_HEAD].iter().collect();
    let tail: String = chars[chars.len() - KEEP_TAIL..].iter().collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_in_the_unit_their_magnitude_calls_for() {
        assert_eq!(human_bytes(1_500_000), "1.50 MB");
        assert_eq!(significant(0.00018757327080890974, 3), "0.000188");
        assert_eq!(significant(12.345, 3), "12.3");
        assert_eq!(significant(1500.0, 3), "1500");
        assert_eq!(significant(7.50293083235639e-6, 3), "0.0000075");
        assert_eq!(human_rate(0.00018757327080890974), "188 KB/s");
        assert_eq!(human_rate(45.234), "45.2 GB/s");
        assert_eq!(human_rate(0.5), "500 MB/s");
        assert_eq!(human_rate(1234.0), "1.23 TB/s");
        assert_eq!(human_rate(0.0), "0 B/s");
        assert_eq!(human_duration(850.0), "850 ns");
        assert_eq!(human_duration(12_400.0), "12.4 µs");
        assert_eq!(human_duration(3_210_000.0), "3.21 ms");
        assert_eq!(human_duration(1.5e9), "1.5 s");
        assert_eq!(percent(0.823), "82 %");
        assert_eq!(percent(0.045), "4.5 %");
        assert_eq!(percent(1.64), "164 %");
        assert_eq!(short_id("0x7f3c2a9b11de9a10"), "0x7f3c…9a10");
        assert_eq!(short_id("0x1a2b"), "0x1a2b");
    }
}
