//! Numbers as the trace writes them.
//!
//! Kineto writes times in microseconds, with three decimals since it records nanoseconds
//! (`"ts": 4458677009853.422`). Read through an `f64` such a time loses its last digits (2^53 ns
//! is 104 days; these are epoch-based microseconds), so times are read from their digits:
//! the integer part times 1000 plus the first three decimals, exactly. Other spellings (an
//! exponent, a quoted number) fall back to a float, rounded to the nanosecond.

/// A time in microseconds as written (`raw`: the value's bytes, a number or a quoted number),
/// in nanoseconds; `None` when it is not a number or does not fit.
pub fn micros_to_ns(raw: &[u8]) -> Option<i64> {
    let raw = unquote(raw);
    let (neg, digits) = match raw.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, raw),
    };
    let int_len = digits.iter().take_while(|c| c.is_ascii_digit()).count();
    if int_len == 0 {
        return float_micros(raw);
    }
    let (int, rest) = digits.split_at(int_len);
    let mut ns = digits_value(int)?.checked_mul(1000)?;
    match rest.split_first() {
        None => {}
        Some((b'.', frac)) => {
            let frac_len = frac.iter().take_while(|c| c.is_ascii_digit()).count();
            if frac_len != frac.len() {
                return float_micros(raw);
            }
            let mut scale = 100;
            for &c in frac.iter().take(3) {
                ns = ns.checked_add(i64::from(c - b'0') * scale)?;
                scale /= 10;
            }
            // Below the nanosecond: rounded half up.
            if frac.get(3).is_some_and(|&c| c >= b'5') {
                ns = ns.checked_add(1)?;
            }
        }
        Some(_) => return float_micros(raw),
    }
    Some(if neg { -ns } else { ns })
}

/// A non-negative integer (`raw` a number, possibly quoted, possibly written `12.0`); `None`
/// otherwise.
pub fn unsigned(raw: &[u8]) -> Option<u64> {
    let raw = unquote(raw);
    let int_len = raw.iter().take_while(|c| c.is_ascii_digit()).count();
    if int_len == 0 || int_len > 20 {
        return None;
    }
    let (int, rest) = raw.split_at(int_len);
    // `12.0` is an integer too; `12.5` is not.
    let whole = match rest.split_first() {
        None => true,
        Some((b'.', zeros)) => zeros.iter().all(|&c| c == b'0'),
        Some(_) => false,
    };
    if !whole {
        return None;
    }
    let mut v: u64 = 0;
    for &c in int {
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// A signed integer, as [`unsigned`].
pub fn signed(raw: &[u8]) -> Option<i64> {
    match unquote(raw).split_first() {
        Some((b'-', rest)) => unsigned(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        _ => unsigned(raw).and_then(|v| i64::try_from(v).ok()),
    }
}

/// [`unsigned`] that fits 32 bits.
pub fn u32_of(raw: &[u8]) -> Option<u32> {
    unsigned(raw).and_then(|v| u32::try_from(v).ok())
}

fn unquote(raw: &[u8]) -> &[u8] {
    raw.strip_prefix(b"\"")
        .and_then(|r| r.strip_suffix(b"\""))
        .unwrap_or(raw)
}

fn digits_value(d: &[u8]) -> Option<i64> {
    if d.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &c in d {
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

fn float_micros(raw: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(raw).ok()?;
    let us: f64 = s.trim().parse().ok()?;
    let ns = (us * 1000.0).round();
    (ns.is_finite() && ns.abs() < 9.0e18).then_some(ns as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_become_nanoseconds_exactly() {
        assert_eq!(
            micros_to_ns(b"4458677009853.422"),
            Some(4_458_677_009_853_422)
        );
        assert_eq!(
            micros_to_ns(b"1694128201429795"),
            Some(1_694_128_201_429_795_000)
        );
        assert_eq!(micros_to_ns(b"2636.669"), Some(2_636_669));
        assert_eq!(micros_to_ns(b"68.0"), Some(68_000));
        assert_eq!(micros_to_ns(b"0.5"), Some(500));
        assert_eq!(micros_to_ns(b"1.23456"), Some(1_235));
        assert_eq!(micros_to_ns(b"-3.5"), Some(-3_500));
        assert_eq!(micros_to_ns(b"\"12\""), Some(12_000));
        assert_eq!(micros_to_ns(b"1.5e3"), Some(1_500_000));
        // A float would have lost the last nanoseconds here.
        let f: f64 = "1694128201429795.123".parse().unwrap();
        assert_ne!((f * 1000.0) as i64, 1_694_128_201_429_795_123);
        assert_eq!(
            micros_to_ns(b"1694128201429795.123"),
            Some(1_694_128_201_429_795_123)
        );
        for bad in [
            &b""[..],
            b"x",
            b"\"\"",
            b"1.2.3",
            b"99999999999999999999",
            b"nan",
        ] {
            assert_eq!(
                micros_to_ns(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn integers() {
        assert_eq!(unsigned(b"60047"), Some(60047));
        assert_eq!(unsigned(b"2.0"), Some(2));
        assert_eq!(unsigned(b"2.5"), None);
        assert_eq!(unsigned(b"-1"), None);
        assert_eq!(unsigned(b"\"84\""), Some(84));
        assert_eq!(unsigned(b"18446744073709551616"), None);
        assert_eq!(signed(b"-7"), Some(-7));
        assert_eq!(u32_of(b"4294967296"), None);
        assert_eq!(u32_of(b"true"), None);
    }
}
