//! Splits one log line into who printed it and what it says.
//!
//! Shapes (everything before `host:pid:tid` is optional and may be combined):
//! ```text
//! host:12:34 [0] NCCL INFO <body>
//! host:12:34 [0] init.cc:1197 NCCL WARN <body>                 (WARN carries file:line)
//! [2026-04-28 14:14:49] host:12:34 [0] NCCL INFO <body>        (`[%F %T] `, NCCL 2.26+ or a collector)
//! 1712345678.123456 host:12:34 [0] NCCL INFO <body>            (NCCL_DEBUG_TIMESTAMP_FORMAT "%s.%6f", also in [])
//! 3: host:12:34 [0] NCCL INFO <body>                           (srun -l)
//! [1,0]<stdout>:host:12:34 [0] NCCL INFO <body>                (OpenMPI --tag-output, no space)
//! (RayTrainWorker pid=615, ip=10.72.7.6) host:12:34 [0] ...    (Ray)
//! gpu1505: gpu1505:12:34 [0] ...   /   [155] host:12:34 [0] ...   /   > host:12:34 [0] ...
//! hostA:1:2 [2] NCCL INFO hostB:3:4 [7] NCCL INFO <body>       (two writers merged: the LAST wins)
//! [0] NCCL INFO <body>                                         (reporter stripped the host)
//! ```
//! The host is the text between the last space (or `:`) and `:pid:tid`; hostnames never contain
//! `:`, which is what lets an OpenMPI tag glued to the host be cut off.

use crate::scan;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Info,
    Warn,
}

/// `host:pid:tid` of the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin<'a> {
    pub host: &'a [u8],
    pub pid: u32,
    pub tid: u32,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Split<'a> {
    pub level: Level,
    pub origin: Option<Origin<'a>>,
    pub dev: Option<u32>,
    pub timestamp_ns: Option<i64>,
    /// The timestamp as printed, kept with warnings.
    pub timestamp_text: Option<&'a [u8]>,
    /// Text after `NCCL INFO ` with leading spaces kept (topology indentation), trailing trimmed.
    pub body: &'a [u8],
    /// Another writer's header was glued in front of this one.
    pub merged: bool,
    /// In a merged line, the host of its first writer (whose text may be glued to this
    /// header's host).
    pub first_host: Option<&'a [u8]>,
}

/// Finds the first `NCCL INFO` / `NCCL WARN` marker at or after `from`: (position, level).
fn marker(line: &[u8], from: usize) -> Option<(usize, Level)> {
    let hay = line.get(from..)?;
    // `NCCL ` cannot overlap itself, so visiting every `N` that starts one finds the same
    // occurrences as a substring search, without its set-up cost on a short line.
    let mut next = 0;
    while let Some(pos) = hay.get(next..).and_then(|h| scan::find_byte(h, b'N')) {
        let at = from + next + pos;
        next += pos + 1;
        if line.get(at + 1..at + 5) != Some(b"CCL ") {
            continue;
        }
        let word = line.get(at + 5..at + 9);
        let level = match word {
            Some(b"INFO") => Level::Info,
            Some(b"WARN") => Level::Warn,
            _ => continue,
        };
        // The marker must stand alone: preceded by start/space, followed by end/space.
        let before_ok = at == 0 || line.get(at - 1).is_some_and(|c| *c == b' ');
        let after_ok = line.get(at + 9).is_none_or(|c| *c == b' ');
        if before_ok && after_ok {
            return Some((at, level));
        }
    }
    None
}

/// Removes the last whitespace-separated token: (rest, token).
fn pop_token(b: &[u8]) -> (&[u8], &[u8]) {
    let end = b
        .iter()
        .rposition(|c| *c != b' ' && *c != b'\t')
        .map_or(0, |i| i + 1);
    let b = b.get(..end).unwrap_or_default();
    match b.iter().rposition(|c| *c == b' ' || *c == b'\t') {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (&b[..0], b),
    }
}

fn bracket_dev(tok: &[u8]) -> Option<u32> {
    let inner = tok.strip_prefix(b"[")?.strip_suffix(b"]")?;
    scan::dec_u32(inner)
}

/// `…host:pid:tid` at the end of a token.
fn origin(tok: &[u8]) -> Option<Origin<'_>> {
    let mut parts = tok.rsplitn(3, |c| *c == b':');
    let tid = scan::dec_u32(parts.next()?)?;
    let pid = scan::dec_u32(parts.next()?)?;
    let rest = parts.next()?;
    let host = match rest.iter().rposition(|c| *c == b':') {
        Some(i) => &rest[i + 1..],
        None => rest,
    };
    if host.is_empty() {
        return None;
    }
    Some(Origin { host, pid, tid })
}

/// Header text before a marker: origin, device and timestamp.
struct Head<'a> {
    origin: Option<Origin<'a>>,
    dev: Option<u32>,
    ts_ns: Option<i64>,
    ts_text: Option<&'a [u8]>,
}

fn head(pre: &[u8], level: Level) -> Head<'_> {
    head_at(pre, level).0
}

/// [`head`], and where the origin token starts in `pre` (when there is one).
fn head_at(pre: &[u8], level: Level) -> (Head<'_>, Option<usize>) {
    let mut h = Head {
        origin: None,
        dev: None,
        ts_ns: None,
        ts_text: None,
    };
    let (mut rest, mut tok) = pop_token(pre);
    if level == Level::Warn && bracket_dev(tok).is_none() && !tok.is_empty() {
        // WARN lines put `file.cc:123` between the device and the marker.
        (rest, tok) = pop_token(rest);
    }
    let Some(dev) = bracket_dev(tok) else {
        return (h, None);
    };
    h.dev = Some(dev);
    let (rest, tok) = pop_token(rest);
    let Some(o) = origin(tok) else {
        return (h, None);
    };
    h.origin = Some(o);
    timestamp(&mut h, pre, rest);
    (h, Some(tok.as_ptr() as usize - pre.as_ptr() as usize))
}

/// A token with a launcher's tag glued in front of it (`[1,0]<stdout>:`, `[default0]:`,
/// `[rank3]:`: the tag wraps NCCL's whole line, stamp included) without the tag.
fn after_tag(tok: &[u8]) -> &[u8] {
    let glued = tok
        .windows(2)
        .rposition(|w| (w[0] == b']' || w[0] == b'>') && w[1] == b':');
    match glued {
        Some(i) => &tok[i + 2..],
        None => tok,
    }
}

/// An optional timestamp right before the host: `rest` is `pre` up to the origin token.
fn timestamp<'a>(h: &mut Head<'a>, pre: &'a [u8], rest: &'a [u8]) {
    // The usual case, an epoch time alone before the host (NCCL's own `%s.%6f`): read forwards.
    // Digits and a dot hold no space, so this is the last token the general path would pop.
    let end = rest
        .iter()
        .rposition(|c| *c != b' ' && *c != b'\t')
        .map_or(0, |i| i + 1);
    let alone = rest.get(..end).unwrap_or_default();
    if let Some(ns) = epoch_ts(alone) {
        h.ts_ns = Some(ns);
        h.ts_text = Some(alone);
        return;
    }
    let (rest2, tok) = pop_token(rest);
    let tok = after_tag(tok);
    let bare = tok
        .strip_prefix(b"[")
        .and_then(|t| t.strip_suffix(b"]"))
        .unwrap_or(tok);
    if let Some(ns) = epoch_ts(bare).or_else(|| epoch_secs(bare)) {
        h.ts_ns = Some(ns);
        h.ts_text = Some(tok);
    } else if tok.ends_with(b"]") || tok.get(2) == Some(&b':') {
        let (_, date) = pop_token(rest2);
        let date = after_tag(date);
        if let Some(ns) = civil_ts(date, tok) {
            h.ts_ns = Some(ns);
            // Both tokens are adjacent slices of `pre`: rebuild the span from their offsets.
            let start = date.as_ptr() as usize - pre.as_ptr() as usize;
            let end = tok.as_ptr() as usize - pre.as_ptr() as usize + tok.len();
            h.ts_text = pre.get(start..end);
        }
    }
}

/// The `host:pid:tid [dev] ` of recent INFO lines (from the origin token to the marker): lines
/// mostly repeat one of a few threads' headers, and then only the timestamp before it needs
/// reading. Direct-mapped on the header's last bytes (tid and device), so a line is compared
/// with one cached header only, and logs of many interleaved ranks still hit.
#[derive(Default)]
pub(crate) struct HeadCache {
    /// [`SLOTS`] entries once the first header is cached.
    slots: Vec<CachedTail>,
}

const SLOTS: usize = 64;

/// The slot for a header: a hash of its last (up to) 8 bytes. Any slot is correct (a hit is
/// checked in full); this one makes a thread's lines meet their own entry.
fn slot_of(pre: &[u8]) -> usize {
    // One 8-byte load; shorter headers (not NCCL's) share slot 0.
    let last = pre
        .len()
        .checked_sub(8)
        .and_then(|from| pre.get(from..))
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .unwrap_or_default();
    let h = u64::from_le_bytes(last).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 58) as usize % SLOTS
}

#[derive(Default)]
struct CachedTail {
    tail: Vec<u8>,
    dev: u32,
    pid: u32,
    tid: u32,
    /// The host within `tail`.
    host_start: usize,
    host_len: usize,
}

/// [`head`] for an INFO line, through the cache. `head` reads tokens from the right: the device
/// token, then the origin token, both found by the whitespace before them. When `pre` ends with
/// a cached tail and the tail starts `pre` or follows whitespace, those two reads give the same
/// tokens as when it was cached, so only the text before the tail is left to read.
fn head_cached<'a>(pre: &'a [u8], cache: &mut HeadCache) -> Head<'a> {
    let slot = slot_of(pre);
    // An empty tail is a free slot (a cached one always holds the origin token).
    let hit = cache.slots.get(slot).filter(|c| {
        !c.tail.is_empty()
            && pre
                .len()
                .checked_sub(c.tail.len())
                .and_then(|from| pre.get(from..))
                .is_some_and(|end| scan::same(end, &c.tail))
    });
    if let Some(c) = hit {
        let start = pre.len() - c.tail.len();
        let rest = match start.checked_sub(1) {
            None => Some(&pre[..0]),
            Some(ws) => match pre.get(ws) {
                Some(b' ' | b'\t') => pre.get(..ws),
                _ => None,
            },
        };
        let host = pre.get(start + c.host_start..start + c.host_start + c.host_len);
        if let (Some(rest), Some(host)) = (rest, host) {
            let mut h = Head {
                origin: Some(Origin {
                    host,
                    pid: c.pid,
                    tid: c.tid,
                }),
                dev: Some(c.dev),
                ts_ns: None,
                ts_text: None,
            };
            timestamp(&mut h, pre, rest);
            return h;
        }
    }
    let (h, at) = head_at(pre, Level::Info);
    if let (Some(at), Some(o), Some(dev)) = (at, h.origin, h.dev) {
        let tail = pre.get(at..).unwrap_or_default();
        if cache.slots.is_empty() {
            cache.slots.resize_with(SLOTS, CachedTail::default);
        }
        if let Some(c) = cache.slots.get_mut(slot) {
            c.tail.clear();
            c.tail.extend_from_slice(tail);
            c.dev = dev;
            c.pid = o.pid;
            c.tid = o.tid;
            c.host_start = o.host.as_ptr() as usize - tail.as_ptr() as usize;
            c.host_len = o.host.len();
        }
    }
    h
}

/// `1712345678.123456` → epoch ns. One pass over the token (it is read on every timestamped
/// line): up to 20 digits, a dot, 1–9 digits, the seconds at most 9·10⁹.
fn epoch_ts(tok: &[u8]) -> Option<i64> {
    let mut secs: u64 = 0;
    let mut n = 0;
    for &c in tok.iter().take(21) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        // Past the bound below it stays past it: no overflow check per digit.
        if secs <= 9_000_000_000 {
            secs = secs * 10 + u64::from(d);
        }
        n += 1;
    }
    if n == 0 || n > 20 || tok.get(n) != Some(&b'.') {
        return None;
    }
    let frac = tok.get(n + 1..)?;
    // Seconds this large cannot be an epoch time (and would overflow ns).
    if secs > 9_000_000_000 || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    let mut f: u64 = 0;
    for &c in frac {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        f = f * 10 + u64::from(d);
    }
    let scale = POW10.get(9 - frac.len())?;
    i64::try_from(secs * 1_000_000_000 + f * scale).ok()
}

/// Whole epoch seconds (`NCCL_DEBUG_TIMESTAMP_FORMAT="%s"`): 9 to 11 digits (years 1973 to
/// 5138), so that a short number (a rank, a pid) is not taken for a time.
fn epoch_secs(tok: &[u8]) -> Option<i64> {
    if !(9..=11).contains(&tok.len()) || !tok.iter().all(u8::is_ascii_digit) {
        return None;
    }
    i64::try_from(scan::dec_u64(tok)?.checked_mul(1_000_000_000)?).ok()
}

use scan::POW10;

/// A line that starts with an epoch timestamp and one space (`1712345678.123456 host...`): the
/// value [`epoch_ts`] reads from that token, and the token's length. Only the shapes NCCL
/// prints (up to 16 digits before the dot, 1–9 after it), read eight digits at a time; `None`
/// for anything else, which the general reader then reads.
pub(crate) fn epoch_lead(line: &[u8]) -> Option<(i64, usize)> {
    // NCCL's own `%s.%6f` for the next three centuries: 10 digits, a dot, 6 digits, a space
    // (then at least a host): three loads from the line, no search.
    if line.get(10) == Some(&b'.') && line.get(17) == Some(&b' ') {
        let (n0, head) = scan::dec_word(scan::word_at(line, 0));
        let (n1, tail) = scan::dec_word(scan::word_at(line, 8));
        let (n2, micros) = scan::dec_word(scan::word_at(line, 11));
        if n0 == 8 && n1 == 2 && n2 == 6 {
            let secs = head * 100 + tail;
            // Ten digits are at most 9 999 999 999: over the bound only past 2255.
            if secs > 9_000_000_000 {
                return None;
            }
            let ns = i64::try_from(secs * 1_000_000_000 + micros * 1_000).ok()?;
            return Some((ns, 17));
        }
    }
    let (n, secs) = scan::dec_run16(line)?;
    if n == 0 || line.get(n) != Some(&b'.') {
        return None;
    }
    let frac = line.get(n + 1..)?;
    let (m, f) = scan::dec_run16(frac)?;
    if m == 0 || m > 9 || frac.get(m) != Some(&b' ') || secs > 9_000_000_000 {
        return None;
    }
    let ns = i64::try_from(secs * 1_000_000_000 + f * POW10.get(9 - m)?).ok()?;
    Some((ns, n + 1 + m))
}

/// Whether `text` holds an `NCCL INFO`/`NCCL WARN` marker (at its start or after a space).
pub(crate) fn has_marker(text: &[u8]) -> bool {
    marker(text, 0).is_some()
}

/// `[2026-04-28` `14:14:49]` (optionally `14:14:49.123456]`) → epoch ns. NCCL formats it in local
/// time and does not say which zone; it is taken as UTC, so it orders lines but is not absolute.
fn civil_ts(date: &[u8], time: &[u8]) -> Option<i64> {
    // `[%F %T]` (NCCL's default) or `%F %T` (a format without the brackets): both or neither.
    let (date, time) = match (date.strip_prefix(b"["), time.strip_suffix(b"]")) {
        (Some(d), Some(t)) => (d, t),
        (None, None) => (date, time),
        _ => return None,
    };
    let mut d = date.split(|c| *c == b'-');
    let y = scan::dec_u64(d.next()?)? as i64;
    let mo = scan::dec_u64(d.next()?)? as i64;
    let da = scan::dec_u64(d.next()?)? as i64;
    if d.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&da) || y > 9999 {
        return None;
    }
    let (hms, frac) = match time.iter().position(|c| *c == b'.') {
        Some(i) => (time.get(..i)?, time.get(i + 1..)),
        None => (time, None),
    };
    let mut t = hms.split(|c| *c == b':');
    let h = scan::dec_u64(t.next()?)? as i64;
    let mi = scan::dec_u64(t.next()?)? as i64;
    let s = scan::dec_u64(t.next()?)? as i64;
    if t.next().is_some() || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut ns = 0i64;
    if let Some(f) = frac {
        if f.is_empty() || f.len() > 9 {
            return None;
        }
        ns = scan::dec_u64(f)? as i64 * 10i64.pow(9 - f.len() as u32);
    }
    let days = scan::days_from_civil(y, mo, da);
    // Checked: a year past 2262 does not fit i64 nanoseconds.
    let secs = days
        .checked_mul(86_400)?
        .checked_add(h * 3600 + mi * 60 + s)?;
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// Splits a line at its NCCL marker; `None` when the line has no `NCCL INFO`/`NCCL WARN`.
pub(crate) fn split_line(line: &[u8]) -> Option<Split<'_>> {
    split_line_cached(line, None)
}

/// [`split_line`], reading the header through `cache` when given (same result either way).
pub(crate) fn split_line_cached<'a>(
    line: &'a [u8],
    cache: Option<&mut HeadCache>,
) -> Option<Split<'a>> {
    let (mut at, mut level) = marker(line, 0)?;
    let mut seg_start = 0usize;
    let mut merged = false;
    let first_at = at;
    // Two writers interleaved: `A [2] NCCL INFO B [7] NCCL INFO body`. If the text between this
    // marker and the next one ends in a valid header, the first writer's message was lost.
    while let Some((next, next_level)) = marker(line, at + 9) {
        let between = line.get(at + 9..next).unwrap_or_default();
        if head(between, next_level).origin.is_some() {
            merged = true;
            seg_start = at + 9;
            at = next;
            level = next_level;
        } else {
            break;
        }
    }
    let pre = line.get(seg_start..at).unwrap_or_default();
    let h = match cache {
        Some(c) if level == Level::Info => head_cached(pre, c),
        _ => head(pre, level),
    };
    let body = line.get(at + 10..).unwrap_or_default().trim_ascii_end();
    let first_host = if merged {
        line.get(..first_at)
            .and_then(|pre| head(pre, Level::Info).origin)
            .map(|o| o.host)
    } else {
        None
    };
    Some(Split {
        level,
        origin: h.origin,
        dev: h.dev,
        timestamp_ns: h.ts_ns,
        timestamp_text: h.ts_text,
        body,
        merged,
        first_host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(line: &str) -> (String, u32, u32, String) {
        let s = split_line(line.as_bytes()).unwrap();
        let o = s.origin.unwrap();
        (
            String::from_utf8_lossy(o.host).into(),
            o.pid,
            o.tid,
            String::from_utf8_lossy(s.body).into(),
        )
    }

    #[test]
    fn prefixes() {
        let want = ("node1".to_string(), 12, 34, "X y".to_string());
        for l in [
            "node1:12:34 [0] NCCL INFO X y",
            "3: node1:12:34 [0] NCCL INFO X y  ",
            "[1,0]<stdout>:node1:12:34 [0] NCCL INFO X y\r",
            "(RayTrainWorker pid=615, ip=10.72.7.6) node1:12:34 [0] NCCL INFO X y",
            "> node1:12:34 [0] NCCL INFO X y ",
            "other:1:2 [2] NCCL INFO node1:12:34 [7] NCCL INFO X y",
            "1712345678.123456 node1:12:34 [0] NCCL INFO X y",
        ] {
            assert_eq!(o(l), want, "{l}");
        }
        let s = split_line(b"1712345678.123456 n:1:2 [0] NCCL INFO a").unwrap();
        assert_eq!(s.timestamp_ns, Some(1_712_345_678_123_456_000));
        let s = split_line(b"[1712345678.5] n:1:2 [0] NCCL INFO a").unwrap();
        assert_eq!(s.timestamp_ns, Some(1_712_345_678_500_000_000));
        let s = split_line(b"[2026-04-28 14:14:49] n:1:2 [0] init.cc:12 NCCL WARN oops").unwrap();
        assert_eq!(s.level, Level::Warn);
        assert_eq!(s.origin.unwrap().pid, 1);
        assert_eq!(s.timestamp_text, Some(&b"[2026-04-28 14:14:49]"[..]));
        assert!(s.timestamp_ns.is_some());
        let s = split_line(b"[0] NCCL INFO 8 Bytes -> Algo 1 proto 2 time 1.0").unwrap();
        assert!(s.origin.is_none());
        assert_eq!(s.dev, Some(0));
        assert!(split_line(b"NCCL version 2.18.3").is_none());
    }

    /// The one-pass epoch reader answers like the straightforward one it replaced.
    #[test]
    fn other_timestamp_formats() {
        for (line, ns) in [
            (
                "1712345678 node1:12:34 [0] NCCL INFO X",
                Some(1_712_345_678_000_000_000),
            ),
            (
                "2025-03-01 10:00:00 node1:12:34 [0] NCCL INFO X",
                Some(1_740_823_200_000_000_000),
            ),
            (
                "[2025-03-01 10:00:00] node1:12:34 [0] NCCL INFO X",
                Some(1_740_823_200_000_000_000),
            ),
            ("[2025-03-01 10:00:00 node1:12:34 [0] NCCL INFO X", None),
            ("12345 node1:12:34 [0] NCCL INFO X", None),
            ("3: node1:12:34 [0] NCCL INFO X", None),
            // A launcher's tag glued to the stamp (it wraps NCCL's whole line).
            (
                "[1,0]<stdout>:1712345678.123456 node1:12:34 [0] NCCL INFO X",
                Some(1_712_345_678_123_456_000),
            ),
            (
                "[default0]:1712345678.123456 node1:12:34 [0] NCCL INFO X",
                Some(1_712_345_678_123_456_000),
            ),
            (
                "[rank3]:[2025-03-01 10:00:00] node1:12:34 [0] NCCL INFO X",
                Some(1_740_823_200_000_000_000),
            ),
            (
                "[default1]:2025-03-01 10:00:00.250 node1:12:34 [0] NCCL INFO X",
                Some(1_740_823_200_250_000_000),
            ),
            ("[1,0]<stdout>:12345 node1:12:34 [0] NCCL INFO X", None),
        ] {
            let s = split_line(line.as_bytes()).unwrap();
            assert_eq!(s.timestamp_ns, ns, "{line}");
            assert_eq!(s.origin.unwrap().host, b"node1", "{line}");
        }
    }

    #[test]
    fn epoch_ts_matches_reference() {
        fn reference(tok: &[u8]) -> Option<i64> {
            let dot = tok.iter().position(|c| *c == b'.')?;
            let secs = scan::dec_u64(tok.get(..dot)?)?;
            let frac = tok.get(dot + 1..)?;
            if secs > 9_000_000_000 || frac.is_empty() || frac.len() > 9 {
                return None;
            }
            let f = scan::dec_u64(frac)?;
            let scale = 10u64.pow(9 - frac.len() as u32);
            i64::try_from(secs * 1_000_000_000 + f * scale).ok()
        }
        for t in [
            "1712345678.123456",
            "1712345678.5",
            "9000000000.999999999",
            "9000000001.1",
            "0.0",
            "00000000000000000001.1",
            "000000000000000000001.1",
            "99999999999999999999.1",
            "999999999999999999999.1",
            "1.1234567890",
            "1.",
            ".5",
            "1.2.3",
            "1a.5",
            "1.5a",
            "",
            "12",
            "-1.5",
            "1.+5",
        ] {
            assert_eq!(epoch_ts(t.as_bytes()), reference(t.as_bytes()), "{t:?}");
        }
    }

    /// The word-at-a-time timestamp reader reads what `epoch_ts` reads from the first token.
    #[test]
    fn epoch_lead_matches_epoch_ts() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut accepted = 0;
        for _ in 0..100_000 {
            let len = (rnd() % 24) as usize;
            let mut t: Vec<u8> = (0..len)
                .map(|_| match rnd() % 12 {
                    0 => b'.',
                    1 => b' ',
                    2 => b"x-/:"[(rnd() % 4) as usize],
                    _ => b'0' + (rnd() % 10) as u8,
                })
                .collect();
            if rnd() % 2 == 0 {
                // The common shape: 10 digits, a dot, 1-9 digits, a space.
                t = format!(
                    "{}.{} h",
                    1_700_000_000 + rnd() % 1_000_000_000,
                    rnd() % 1_000_000
                )
                .into_bytes();
            }
            if let Some((ns, n)) = epoch_lead(&t) {
                accepted += 1;
                assert_eq!(t.get(n), Some(&b' '));
                assert_eq!(
                    epoch_ts(&t[..n]),
                    Some(ns),
                    "{}",
                    String::from_utf8_lossy(&t)
                );
            } else {
                // Refused only where the token is not of NCCL's shape.
                let tok = t.split(|c| *c == b' ').next().unwrap_or_default();
                let dot = tok.iter().position(|c| *c == b'.');
                let shaped = t.contains(&b' ')
                    && dot.is_some_and(|d| {
                        d > 0
                            && d <= 16
                            && (1..=9).contains(&(tok.len() - d - 1))
                            && tok
                                .iter()
                                .enumerate()
                                .all(|(i, c)| i == d || c.is_ascii_digit())
                    });
                if shaped {
                    assert_eq!(epoch_ts(tok), None, "{}", String::from_utf8_lossy(&t));
                }
            }
        }
        assert!(accepted > 40_000, "{accepted}");
    }

    /// The header cache gives what the uncached read gives, whatever line came before.
    #[test]
    fn cached_head_is_exact() {
        let lines: [&[u8]; 14] = [
            b"node1:12:34 [0] NCCL INFO a",
            b"xnode1:12:34 [0] NCCL INFO a",
            b"1712345678.123456 node1:12:34 [0] NCCL INFO a",
            b"[1712345678.5] node1:12:34 [0] NCCL INFO a",
            b"[2026-04-28 14:14:49] node1:12:34 [0] NCCL INFO a",
            b"3:node1:12:34 [0] NCCL INFO a",
            b"3: node1:12:34 [0]  NCCL INFO a",
            b"\tnode1:12:34 [0] NCCL INFO a",
            b"[1,0]<stdout>:node1:12:34 [0] NCCL INFO a",
            b"other:1:2 [2] NCCL INFO node1:12:34 [0] NCCL INFO a",
            b"node1:12:34 [0] init.cc:5 NCCL WARN a",
            b"12:34 [0] NCCL INFO a",
            b"[0] NCCL INFO a",
            b"1:12:34 [0] NCCL INFO a",
        ];
        let show = |s: Option<Split<'_>>| format!("{s:?}");
        for a in lines {
            for b in lines {
                let mut c = HeadCache::default();
                for l in [a, b, a, b] {
                    assert_eq!(
                        show(split_line_cached(l, Some(&mut c))),
                        show(split_line(l)),
                        "{} after {}",
                        String::from_utf8_lossy(l),
                        String::from_utf8_lossy(a)
                    );
                }
            }
        }
    }
}
