//! Byte-level token helpers shared by the line parsers.
//!
//! Everything works on `&[u8]` (never `&str`) so that a line cut in the middle of a UTF-8
//! sequence, or plain binary garbage, can never make a parser panic; and nothing allocates.

/// Splits on spaces and tabs, skipping empty tokens (NCCL pads some fields with runs of spaces).
pub(crate) fn tokens(b: &[u8]) -> Tokens<'_> {
    Tokens { rest: b }
}

pub(crate) struct Tokens<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            // Tokens are short: a plain loop beats a SIMD search's set-up cost here.
            let end = self
                .rest
                .iter()
                .position(|c| *c == b' ' || *c == b'\t')
                .unwrap_or(self.rest.len());
            let tok = self.rest.get(..end).unwrap_or_default();
            self.rest = self.rest.get(end + 1..).unwrap_or_default();
            if !tok.is_empty() {
                return Some(tok);
            }
        }
    }
}

/// Searchers built once: building a `memmem::Finder` per call costs more than the search itself
/// on a short line, and these run on every line.
pub(crate) struct Finders {
    pub bytes_arrow: memchr::memmem::Finder<'static>,
    pub coll_channels: memchr::memmem::Finder<'static>,
}

pub(crate) static FINDERS: std::sync::LazyLock<Finders> = std::sync::LazyLock::new(|| Finders {
    bytes_arrow: memchr::memmem::Finder::new(b" Bytes -> "),
    coll_channels: memchr::memmem::Finder::new(b"coll channels"),
});

/// Position of `needle` in `hay` (for rare paths; hot paths use [`FINDERS`]).
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    // `memmem::find` builds a searcher per call, which costs more than scanning a log line.
    let Some((&first, tail)) = needle.split_first() else {
        return Some(0);
    };
    if hay.len() > 256 {
        return memchr::memmem::find(hay, needle);
    }
    let mut from = 0;
    while let Some(i) = hay.get(from..).and_then(|h| memchr::memchr(first, h)) {
        let at = from + i;
        let rest = hay.get(at + 1..)?;
        if rest.starts_with(tail) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Position of the first `b` in `hay`. Headers before the NCCL marker are a few dozen bytes:
/// eight at a time in a register beats a call into the SIMD search there.
#[inline]
pub(crate) fn find_byte(hay: &[u8], b: u8) -> Option<usize> {
    if hay.len() > 128 {
        return memchr::memchr(b, hay);
    }
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let rep = LO * u64::from(b);
    let mut chunks = hay.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let x = u64::from_le_bytes(w) ^ rep;
        // The lowest flagged byte is the first zero byte of `x` (flags above it may be false).
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|c| *c == b)
        .map(|i| at + i)
}

/// Byte equality of short slices, compared a word at a time inline (no `memcmp` call); a
/// length that is no multiple of 8 ends with one overlapping word, not a byte loop.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    let w8 = |s: &[u8], i: usize| s.get(i..i + 8).and_then(|c| c.first_chunk::<8>()).copied();
    let w4 = |s: &[u8], i: usize| s.get(i..i + 4).and_then(|c| c.first_chunk::<4>()).copied();
    if n > 32 && cfg!(not(target_arch = "wasm32")) {
        // Longer texts (a line's head, an operation line's tail): the C library's vector
        // compare (`bcmp`) beats the word loop past a few words. (Not in wasm, whose `bcmp`
        // is compiled from Rust's portable loop.)
        a == b
    } else if n >= 8 {
        let mut i = 0;
        while i + 8 <= n {
            if w8(a, i) != w8(b, i) {
                return false;
            }
            i += 8;
        }
        i == n || w8(a, n - 8) == w8(b, n - 8)
    } else if n >= 4 {
        w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4)
    } else {
        a == b
    }
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

/// Decimal unsigned number, the whole token.
pub(crate) fn dec_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    // Up to 19 digits cannot overflow a u64: no checked arithmetic on the common path.
    let (head, last) = if b.len() == 20 {
        (&b[..19], b.get(19))
    } else {
        (b, None)
    };
    let mut v: u64 = 0;
    for &c in head {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u64::from(d);
    }
    match last {
        None => Some(v),
        Some(&c) => {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v.checked_mul(10)?.checked_add(u64::from(d))
        }
    }
}

pub(crate) fn dec_u32(b: &[u8]) -> Option<u32> {
    dec_u64(b).and_then(|v| u32::try_from(v).ok())
}

/// Signed decimal (`root -1`, `color -1`).
pub(crate) fn dec_i64(b: &[u8]) -> Option<i64> {
    match b.split_first() {
        Some((b'-', rest)) => dec_u64(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        _ => dec_u64(b).and_then(|v| i64::try_from(v).ok()),
    }
}

/// Hexadecimal, with or without `0x` (NCCL prints opCount without it, commId with it).
pub(crate) fn hex_u64(b: &[u8]) -> Option<u64> {
    let b = b
        .strip_prefix(b"0x")
        .or_else(|| b.strip_prefix(b"0X"))
        .unwrap_or(b);
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = HEX[usize::from(c)];
        if d > 15 {
            return None;
        }
        v = (v << 4) | u64::from(d);
    }
    Some(v)
}

/// The value of a hex digit; above 15 for every other byte.
#[inline(always)]
pub(crate) fn hex_digit(c: u8) -> u8 {
    HEX[usize::from(c)]
}

/// Hex digit values; 0xff for every other byte.
static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Word-at-a-time (SWAR) number reading: eight ASCII bytes classified and combined in one
/// 64-bit register instead of one loop turn per digit. Operation lines are a dozen numbers each
/// (pointers of 12 hex digits, epoch timestamps of 16 digits), so digits are most of a big log.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` whose value is in `lo..=hi` (ASCII, `lo ≥ 1`). The high
/// bits are cleared before the additions so that no byte carries into the next.
#[inline(always)]
fn bytes_in(x: u64, lo: u8, hi: u8) -> u64 {
    let low7 = x & !HIGHS;
    let ge = low7.wrapping_add(ONES * u64::from(0x80 - lo));
    let gt = low7.wrapping_add(ONES * u64::from(0x7f - hi));
    ge & !gt & !x & HIGHS
}

/// The first eight bytes of `b` as a little-endian word, zero-padded (a zero byte is no digit,
/// so a short tail ends a run where the slice ends).
#[inline(always)]
fn word(b: &[u8]) -> u64 {
    match b.first_chunk::<8>() {
        Some(w) => u64::from_le_bytes(*w),
        // Byte by byte into the register: a copy into a stack buffer then a load would stall
        // on store forwarding (and call `memcpy`), and this runs at the end of every line.
        None => b
            .iter()
            .enumerate()
            .fold(0, |w, (i, c)| w | (u64::from(*c) << (8 * i))),
    }
}

/// The eight bytes of `b` from `at` as a little-endian word, zero-padded past the end. Near the
/// end of a slice of at least eight bytes, its last eight are loaded and shifted down (an
/// overlapping load), so a field at the end of a line still costs one load.
#[inline(always)]
pub(crate) fn word_at(b: &[u8], at: usize) -> u64 {
    if let Some(w) = b.get(at..).and_then(|t| t.first_chunk::<8>()) {
        return u64::from_le_bytes(*w);
    }
    match b.last_chunk::<8>() {
        Some(last) if at < b.len() => u64::from_le_bytes(*last) >> (8 * (at + 8 - b.len())),
        Some(_) => 0,
        None => word(b.get(at..).unwrap_or_default()),
    }
}

/// How many of the word's first bytes are flagged in `mask` (high bits), counted from byte 0.
#[inline(always)]
fn run_len(mask: u64) -> u32 {
    (!mask & HIGHS).trailing_zeros() / 8
}

/// The hex digits at the start of a word: (count 0..=8, their value).
#[inline(always)]
fn hex_word(x: u64) -> (u32, u64) {
    let digit = bytes_in(x, b'0', b'9');
    let letter = bytes_in(x | 0x2020_2020_2020_2020, b'a', b'f');
    let n = run_len(digit | letter);
    if n == 0 {
        return (0, 0);
    }
    // Digit values, one per byte: `c & 15`, plus 9 for letters ('a' = 0x61 → 1 + 9).
    let nib = (x & 0x0f0f_0f0f_0f0f_0f0f) + (letter >> 7) * 9;
    // The run moved to the top bytes: byte k then has weight 16^(7-k); fold pairs of bytes,
    // then pairs of pairs, then the two halves.
    let v = nib << (64 - 8 * n);
    let v = ((v << 4) | (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = ((v << 8) | (v >> 16)) & 0x0000_ffff_0000_ffff;
    let v = ((v << 16) | (v >> 32)) & 0xffff_ffff;
    (n, v)
}

/// The decimal digits at the start of a word: (count 0..=8, their value).
#[inline(always)]
pub(crate) fn dec_word(x: u64) -> (u32, u64) {
    let n = run_len(bytes_in(x, b'0', b'9'));
    if n == 0 {
        return (0, 0);
    }
    let v = (x & 0x0f0f_0f0f_0f0f_0f0f) << (64 - 8 * n);
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    let v = (v.wrapping_mul(10_000) + (v >> 32)) & 0xffff_ffff;
    (n, v)
}

/// The run of hex digits at the start of `b`: (its length, capped at 17, and the value of its
/// first 16 digits). A length of 17 means "more than 16": no `u64` holds it.
#[inline(always)]
pub(crate) fn hex_run(b: &[u8]) -> (usize, u64) {
    let (n1, v1) = hex_word(word(b));
    if n1 < 8 {
        return (n1 as usize, v1);
    }
    let (n2, v2) = hex_word(word_at(b, 8));
    if n2 < 8 {
        let v = if n2 == 0 { v1 } else { (v1 << (4 * n2)) | v2 };
        return (8 + n2 as usize, v);
    }
    let more = b.get(16).is_some_and(|c| hex_digit(*c) < 16);
    (16 + usize::from(more), (v1 << 32) | v2)
}

/// The run of decimal digits at the start of `b`, up to 16 of them: (length, value); `None`
/// when the run is longer (the caller reads those rare ones digit by digit).
#[inline(always)]
pub(crate) fn dec_run16(b: &[u8]) -> Option<(usize, u64)> {
    // One digit before a non-digit (most fields of an operation line): no word needed.
    if let (Some(&d), Some(&next)) = (b.first(), b.get(1)) {
        if d.is_ascii_digit() && !next.is_ascii_digit() {
            return Some((1, u64::from(d - b'0')));
        }
    }
    let (n1, v1) = dec_word(word(b));
    if n1 < 8 {
        return Some((n1 as usize, v1));
    }
    let (n2, v2) = dec_word(word_at(b, 8));
    if n2 == 8 && b.get(16).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some((8 + n2 as usize, v1 * POW10[n2 as usize] + v2))
}

/// The run of ASCII letters and digits at the start of `b`, up to 16 bytes: its length.
#[inline(always)]
pub(crate) fn alnum_run16(b: &[u8]) -> usize {
    let class = |x: u64| bytes_in(x, b'0', b'9') | bytes_in(x | 0x2020_2020_2020_2020, b'a', b'z');
    let n1 = run_len(class(word(b)));
    if n1 < 8 {
        return n1 as usize;
    }
    8 + run_len(class(word(b.get(8..).unwrap_or_default()))) as usize
}

/// Powers of ten up to 10⁹.
pub(crate) const POW10: [u64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// A `%p` pointer: `0x7f..` or glibc's `(nil)` for null.
pub(crate) fn ptr(b: &[u8]) -> Option<u64> {
    if b == b"(nil)" {
        Some(0)
    } else {
        hex_u64(b)
    }
}

pub(crate) fn float(b: &[u8]) -> Option<f64> {
    std::str::from_utf8(b).ok()?.parse::<f64>().ok()
}

/// The token that follows the first token equal to `key`.
pub(crate) fn value_after<'a>(b: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut it = tokens(b);
    while let Some(t) = it.next() {
        if t == key {
            return it.next();
        }
    }
    None
}

/// An operation name as NCCL prints it, without going through `str`: by length first, then
/// one fixed-size compare (this runs for every operation and tuning line). A name this build
/// has no variant for (NCCL 2.28's `AlltoAll`, ...) is `OpType::Other` when it has the shape
/// of one ([`model::OpType::intern`]).
pub(crate) fn op_type(name: &[u8]) -> Option<model::OpType> {
    known_op_type(name).or_else(|| {
        std::str::from_utf8(name)
            .ok()
            .and_then(model::OpType::intern)
    })
}

pub(crate) fn known_op_type(name: &[u8]) -> Option<model::OpType> {
    use model::OpType;
    let is = |want: &[u8]| name == want;
    Some(match name.len() {
        4 if is(b"Send") => OpType::Send,
        4 if is(b"Recv") => OpType::Recv,
        6 if is(b"Reduce") => OpType::Reduce,
        6 if is(b"Gather") => OpType::Gather,
        7 if is(b"Scatter") => OpType::Scatter,
        8 if is(b"SendRecv") => OpType::SendRecv,
        8 if is(b"AllToAll") => OpType::AllToAll,
        9 if is(b"AllReduce") => OpType::AllReduce,
        9 if is(b"AllGather") => OpType::AllGather,
        9 if is(b"Broadcast") => OpType::Broadcast,
        13 if is(b"ReduceScatter") => OpType::ReduceScatter,
        _ => return None,
    })
}

/// The version a banner names: NCCL's `NCCL version 2.18.3+cuda12.2` or RCCL's `RCCL version :
/// 2.27.7-HEAD:0d2c4fd` (also without the colon), at the start of `text` or after a launcher's
/// prefix (`0: `, `[1,0]<stdout>:`, `[default0]:`, `(pid=12) `): the version token, which
/// starts with a digit.
pub(crate) fn banner_version(text: &[u8]) -> Option<&[u8]> {
    for key in [&b"NCCL version "[..], b"RCCL version "] {
        let Some(pos) = find(text, key) else {
            continue;
        };
        let before_ok = pos == 0
            || text
                .get(pos - 1)
                .is_some_and(|c| matches!(c, b' ' | b'\t' | b':' | b']' | b'>' | b')'));
        if !before_ok {
            continue;
        }
        let mut rest = text.get(pos + key.len()..)?.trim_ascii_start();
        if let Some(r) = rest.strip_prefix(b":") {
            rest = r.trim_ascii_start();
        }
        let v = tokens(rest).next()?;
        return v.first().is_some_and(u8::is_ascii_digit).then_some(v);
    }
    None
}

/// Lossy text for kept strings (hosts, versions, messages).
pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners() {
        for (line, v) in [
            (
                &b"NCCL version 2.4.8+cuda9.0"[..],
                Some(&b"2.4.8+cuda9.0"[..]),
            ),
            (
                b"[1,0]<stdout>:NCCL version 2.5.6+cuda10.2",
                Some(b"2.5.6+cuda10.2"),
            ),
            (
                b"[default0]:NCCL version 2.22.3+cuda12.4",
                Some(b"2.22.3+cuda12.4"),
            ),
            (b"0: NCCL version 2.21.5+cuda12.4", Some(b"2.21.5+cuda12.4")),
            (
                b"RCCL version : 2.27.7-HEAD:0d2c4fd",
                Some(b"2.27.7-HEAD:0d2c4fd"),
            ),
            (
                b"RCCL version 2.18.3+hip6.1 HEAD:ab12",
                Some(b"2.18.3+hip6.1"),
            ),
            (b"xNCCL version 2.4.8", None),
            (b"NCCL version unknown", None),
            (b"Using NCCL version", None),
        ] {
            assert_eq!(banner_version(line), v, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(hex_u64(b"1606"), Some(0x1606));
        assert_eq!(hex_u64(b"0xbd10cc2bcb56e132"), Some(0xbd10_cc2b_cb56_e132));
        assert_eq!(hex_u64(b"0x"), None);
        assert_eq!(ptr(b"(nil)"), Some(0));
        assert_eq!(dec_i64(b"-1"), Some(-1));
        assert_eq!(dec_u64(b"99999999999999999999999"), None);
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(
            tokens(b"  a\tbb   c ").collect::<Vec<_>>(),
            [&b"a"[..], b"bb", b"c"]
        );
        for op in model::OpType::ALL {
            assert_eq!(op_type(op.name().as_bytes()), Some(op));
        }
        assert_eq!(days_from_civil(2026, 4, 28), 20571);
        for t in [
            "0",
            "19",
            "18446744073709551615",
            "18446744073709551616",
            "1a",
            "",
            " 1",
        ] {
            assert_eq!(dec_u64(t.as_bytes()), t.parse::<u64>().ok(), "{t:?}");
        }
    }

    /// The word-at-a-time number readers agree with digit-by-digit reading on every prefix
    /// length, every digit count, upper- and lower-case hex, and bytes next to the digit ranges.
    #[test]
    fn swar_runs_match_scalar() {
        let alphabet = b"0123456789abcdefABCDEF/:@`gG[{zZ \x00\x7f\x80\xb0\xe1\xff.x";
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200_000 {
            let len = (rnd() % 24) as usize;
            // Mostly digits, so long runs are common.
            let b: Vec<u8> = (0..len)
                .map(|_| match rnd() % 4 {
                    0 => alphabet[(rnd() % alphabet.len() as u64) as usize],
                    1 => b"0123456789abcdef"[(rnd() % 16) as usize],
                    _ => b'0' + (rnd() % 10) as u8,
                })
                .collect();
            let hex_n = b
                .iter()
                .take(17)
                .take_while(|c| hex_digit(**c) < 16)
                .count();
            let hex_v = b
                .iter()
                .take(hex_n.min(16))
                .fold(0u64, |v, c| (v << 4) | u64::from(hex_digit(*c)));
            assert_eq!(
                hex_run(&b),
                (hex_n, hex_v),
                "{:?}",
                String::from_utf8_lossy(&b)
            );
            let dec_n = b.iter().take_while(|c| c.is_ascii_digit()).count();
            let want = (dec_n <= 16).then(|| {
                let v = b[..dec_n]
                    .iter()
                    .fold(0u64, |v, c| v * 10 + u64::from(c - b'0'));
                (dec_n, v)
            });
            assert_eq!(dec_run16(&b), want, "{:?}", String::from_utf8_lossy(&b));
            let alnum = b
                .iter()
                .take(16)
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            assert_eq!(alnum_run16(&b), alnum, "{:?}", String::from_utf8_lossy(&b));
        }
    }

    /// The word-at-a-time byte search and comparison answer like the plain ones.
    #[test]
    fn find_byte_and_same_match_std() {
        let hay: Vec<u8> = (0..300u32)
            .map(|i| b"NxN\x80\x00M\xffNNab"[(i * 7 % 11) as usize])
            .collect();
        for start in 0..hay.len() {
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 44, 128, 129, 200] {
                let h = hay.get(start..(start + len).min(hay.len())).unwrap();
                for b in [b'N', b'M', 0x80, 0, 0xff, b'z'] {
                    assert_eq!(find_byte(h, b), h.iter().position(|c| *c == b));
                }
                let g = hay.get(..h.len()).unwrap();
                assert_eq!(same(h, g), h == g);
                assert!(same(h, h));
            }
        }
    }

    /// The short-haystack search finds what `memmem` finds.
    #[test]
    fn find_matches_memmem() {
        let hay = b"NCCL NCCL INFO  a] b] ..- Init COMPLETE NCCL version 2 NCCL WAR";
        for n in [
            &b""[..],
            b"N",
            b"NCCL ",
            b"NCCL INF",
            b"NCCL WAR",
            b"] ",
            b"..",
            b"- Init COMPLETE",
            b"NCCL version ",
            b"zz",
        ] {
            for start in 0..hay.len() {
                let h = &hay[start..];
                assert_eq!(find(h, n), memchr::memmem::find(h, n));
            }
        }
    }
}
