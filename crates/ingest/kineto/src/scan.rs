//! The JSON scanner: finds where values end and what an object's members are, on a byte slice,
//! without building anything.
//!
//! Why by hand: a trace is mostly events the reader does not keep (CPU operators, Python
//! functions, memory copies), and building each as a `serde_json::Value` was most of the time a
//! plain parse takes. Here an event is walked once: its top-level members are found (a string's
//! end by `memchr`, a nested value's by counting brackets outside strings) and only the few
//! members an event is classified by are looked at. The scanner is lenient where leniency costs
//! nothing (it does not check that brackets match in kind, nor escapes) and says
//! [`Scan::Incomplete`] when the slice ends inside the value, so the caller can wait for more
//! bytes; it never reads past the slice and never panics.

use memchr::memchr2;

/// Why a value could not be scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// The slice ends inside the value: more bytes are needed.
    Incomplete,
    /// Not JSON at this offset of the slice.
    Bad(usize, &'static str),
}

/// What a member's value is, by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Object,
    Array,
    /// A number, `true`, `false` or `null` (or anything else not quoted or bracketed).
    Scalar,
}

/// Bytes that matter when skipping a nested value: 1 quote, 2 opening, 3 closing bracket.
static NESTING: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = 1;
    t[b'{' as usize] = 2;
    t[b'[' as usize] = 2;
    t[b'}' as usize] = 3;
    t[b']' as usize] = 3;
    t
};

/// The first offset at or after `i` that is not JSON whitespace.
#[inline]
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
            break;
        }
        i += 1;
    }
    i
}

/// The offset just past the string whose opening quote is at `i`.
#[inline]
pub fn string_end(b: &[u8], i: usize) -> Result<usize, Scan> {
    let mut j = i + 1;
    loop {
        let rest = b.get(j..).ok_or(Scan::Incomplete)?;
        let k = memchr2(b'"', b'\\', rest).ok_or(Scan::Incomplete)?;
        let p = j + k;
        if b[p] == b'"' {
            return Ok(p + 1);
        }
        // A backslash escapes the next byte (a `\uXXXX`'s digits need no care).
        j = p + 2;
    }
}

/// The offset just past the object or array whose opening bracket is at `i`.
pub fn container_end(b: &[u8], i: usize) -> Result<usize, Scan> {
    let mut depth = 0usize;
    let mut j = i;
    while let Some(&c) = b.get(j) {
        match NESTING[c as usize] {
            0 => j += 1,
            1 => j = string_end(b, j)?,
            2 => {
                depth += 1;
                j += 1;
            }
            _ => {
                depth = depth.saturating_sub(1);
                j += 1;
                if depth == 0 {
                    return Ok(j);
                }
            }
        }
    }
    Err(Scan::Incomplete)
}

/// The offset just past the scalar (number, `true`, `null`, ...) starting at `i`: it ends at the
/// first delimiter. A scalar running to the slice's end is incomplete (more digits may follow).
#[inline]
pub fn scalar_end(b: &[u8], i: usize) -> Result<usize, Scan> {
    let mut j = i;
    while let Some(&c) = b.get(j) {
        if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' | b':') {
            return if j == i {
                Err(Scan::Bad(i, "a value was expected"))
            } else {
                Ok(j)
            };
        }
        j += 1;
    }
    Err(Scan::Incomplete)
}

/// The kind and end of the value starting at `i` (no whitespace before it).
#[inline]
pub fn value_end(b: &[u8], i: usize) -> Result<(Kind, usize), Scan> {
    match b.get(i) {
        None => Err(Scan::Incomplete),
        Some(b'"') => Ok((Kind::String, string_end(b, i)?)),
        Some(b'{') => Ok((Kind::Object, container_end(b, i)?)),
        Some(b'[') => Ok((Kind::Array, container_end(b, i)?)),
        Some(_) => Ok((Kind::Scalar, scalar_end(b, i)?)),
    }
}

/// Calls `member(key, kind, value)` for each member of the object whose `{` is at `i`, in order,
/// and returns the offset just past its `}`. `key` is the key's raw bytes between the quotes
/// (escapes not decoded), `value` the value's raw bytes (a string's with its quotes).
/// A trailing comma before the `}` is tolerated (some writers leave one).
pub fn members<'a>(
    b: &'a [u8],
    i: usize,
    mut member: impl FnMut(&'a [u8], Kind, &'a [u8]),
) -> Result<usize, Scan> {
    debug_assert_eq!(b.get(i), Some(&b'{'));
    let mut j = skip_ws(b, i + 1);
    loop {
        match b.get(j) {
            None => return Err(Scan::Incomplete),
            Some(b'}') => return Ok(j + 1),
            Some(b'"') => {}
            Some(_) => return Err(Scan::Bad(j, "a member name was expected")),
        }
        let key_end = string_end(b, j)?;
        let key = &b[j + 1..key_end - 1];
        j = skip_ws(b, key_end);
        match b.get(j) {
            None => return Err(Scan::Incomplete),
            Some(b':') => {}
            Some(_) => return Err(Scan::Bad(j, "`:` was expected after a member name")),
        }
        j = skip_ws(b, j + 1);
        let (kind, end) = value_end(b, j)?;
        member(key, kind, &b[j..end]);
        j = skip_ws(b, end);
        match b.get(j) {
            None => return Err(Scan::Incomplete),
            Some(b',') => j = skip_ws(b, j + 1),
            Some(b'}') => return Ok(j + 1),
            Some(_) => return Err(Scan::Bad(j, "`,` or `}` was expected after a member")),
        }
    }
}

/// Calls `element(kind, value)` for each element of the array whose `[` is at `i`; returns the
/// offset just past its `]`.
pub fn elements<'a>(
    b: &'a [u8],
    i: usize,
    mut element: impl FnMut(Kind, &'a [u8]),
) -> Result<usize, Scan> {
    debug_assert_eq!(b.get(i), Some(&b'['));
    let mut j = skip_ws(b, i + 1);
    loop {
        match b.get(j) {
            None => return Err(Scan::Incomplete),
            Some(b']') => return Ok(j + 1),
            Some(_) => {}
        }
        let (kind, end) = value_end(b, j)?;
        element(kind, &b[j..end]);
        j = skip_ws(b, end);
        match b.get(j) {
            None => return Err(Scan::Incomplete),
            Some(b',') => j = skip_ws(b, j + 1),
            Some(b']') => return Ok(j + 1),
            Some(_) => return Err(Scan::Bad(j, "`,` or `]` was expected after an element")),
        }
    }
}

/// A string value's text (`raw` with its quotes): borrowed when it has no escape, decoded
/// otherwise; `None` when it is not a string or its escapes are invalid.
pub fn text(raw: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !inner.contains(&b'\\') {
        return std::str::from_utf8(inner)
            .ok()
            .map(std::borrow::Cow::Borrowed)
            .or_else(|| Some(String::from_utf8_lossy(inner).into_owned().into()));
    }
    serde_json::from_slice::<String>(raw).ok().map(Into::into)
}

/// Skips a value that may be larger than any buffer, fed piece by piece: the state between
/// pieces is the nesting depth and whether the last piece ended inside a string or an escape.
#[derive(Debug, Clone, Default)]
pub struct Skipper {
    depth: usize,
    in_string: bool,
    escaped: bool,
    started: bool,
}

impl Skipper {
    /// Consumes `b` from its start; `Some(n)` when the value ended after `n` bytes. A scalar is
    /// never skipped this way (scalars are short): only strings, objects and arrays.
    pub fn feed(&mut self, b: &[u8]) -> Option<usize> {
        for (k, &c) in b.iter().enumerate() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        return Some(k + 1);
                    }
                }
                continue;
            }
            match c {
                b'"' => {
                    self.in_string = true;
                    self.started = true;
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    self.started = true;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 && self.started {
                        return Some(k + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_end_where_json_says() {
        let b = br#"{"a": "x\"y", "b": [1, {"c": "]}"}], "d": 12.5, "e": {}}"#;
        let mut seen = Vec::new();
        let end = members(b, 0, |k, kind, v| {
            seen.push((
                std::str::from_utf8(k).unwrap().to_string(),
                kind,
                std::str::from_utf8(v).unwrap().to_string(),
            ))
        })
        .unwrap();
        assert_eq!(end, b.len());
        let keys: Vec<_> = seen.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(keys, ["a", "b", "d", "e"]);
        assert_eq!(seen[0].2, r#""x\"y""#);
        assert_eq!(seen[1].2, r#"[1, {"c": "]}"}]"#);
        assert_eq!(seen[2], ("d".into(), Kind::Scalar, "12.5".into()));
        assert_eq!(text(seen[0].2.as_bytes()).unwrap(), "x\"y");
    }

    /// Every cut of a value is incomplete, never a wrong end or a panic.
    #[test]
    fn every_cut_is_incomplete() {
        let b = br#"{"a": "x\"y", "b": [1, {"c": "]}"}], "d": 12.5, "e": {}}"#;
        for cut in 1..b.len() {
            let r = members(&b[..cut], 0, |_, _, _| {});
            assert_eq!(r, Err(Scan::Incomplete), "cut at {cut}");
        }
    }

    #[test]
    fn arrays_and_bad_input() {
        let b = br#"[1, "two", [3], {"four": 4}]"#;
        let mut kinds = Vec::new();
        assert_eq!(elements(b, 0, |k, _| kinds.push(k)), Ok(b.len()));
        assert_eq!(
            kinds,
            [Kind::Scalar, Kind::String, Kind::Array, Kind::Object]
        );
        assert!(matches!(
            members(b"{1: 2}", 0, |_, _, _| {}),
            Err(Scan::Bad(1, _))
        ));
        assert!(matches!(
            members(br#"{"a" 2}"#, 0, |_, _, _| {}),
            Err(Scan::Bad(5, _))
        ));
        // A trailing comma is tolerated.
        assert_eq!(members(br#"{"a": 1,}"#, 0, |_, _, _| {}), Ok(9));
    }

    #[test]
    fn skipper_crosses_pieces() {
        let b = br#"{"a": ["x\"}", {"b": 1}], "c": "\\"} tail"#;
        for cut in 1..b.len() - 5 {
            let mut s = Skipper::default();
            let first = s.feed(&b[..cut]);
            let n = match first {
                Some(n) => n,
                None => cut + s.feed(&b[cut..]).expect("ends in the second piece"),
            };
            assert_eq!(n, b.len() - 5, "cut at {cut}");
        }
    }
}
