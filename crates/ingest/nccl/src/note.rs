//! How a finding about a line is worded, and its inverse: the parser writes a note as
//! `reason[: detail]: "the line's text"` (the text quoted as Rust quotes a string, cut at
//! [`EXCERPT`] bytes and marked `…`); [`split_note`] takes such a message apart again, so that a
//! viewer can show the reason, the detail and the line's own text each in its place, and count
//! the notes per reason.

use model::Diagnostic;

/// How much of a line a finding quotes.
pub(crate) const EXCERPT: usize = 160;

/// The reasons whose notes carry a detail after them (`reason: detail`), which [`split_note`]
/// keeps apart from the reason so that notes of one kind count together.
pub(crate) const PRINTED_TWICE: &str = "per-collective line printed twice (counted twice)";
pub(crate) const UNKNOWN_OP: &str =
    "per-collective line with an operation this build does not know";
/// [`UNKNOWN_OP`] as the skipped line's note starts.
const SKIPPED_UNKNOWN_OP: &str =
    "line skipped: per-collective line with an operation this build does not know";
const DETAILED: [&str; 2] = [PRINTED_TWICE, SKIPPED_UNKNOWN_OP];

/// The start of a line as quoted text (lossy UTF-8, control characters escaped), `…` when cut.
pub(crate) fn excerpt(line: &[u8]) -> String {
    let cut = line.len() > EXCERPT;
    let text = String::from_utf8_lossy(line.get(..EXCERPT).unwrap_or(line));
    // A cut through a UTF-8 sequence shows as one replacement character; that is fine here.
    let mut q = format!("{text:?}");
    if cut {
        q.push('…');
    }
    q
}

/// A note taken apart: what kind it is, what it says about this line, and the line's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoteParts<'a> {
    /// The kind of note (`line skipped: not an NCCL line`): equal for every note of one kind.
    pub reason: &'a str,
    /// What the note says about this line in particular (`AllReduce opCount 5 comm 0x1`).
    pub detail: Option<&'a str>,
    /// The line's text as quoted in the message (without its quotes), if it is quoted.
    quoted: Option<&'a str>,
    /// The quoted text is the start of a longer line.
    pub cut: bool,
}

impl NoteParts<'_> {
    /// The line's text as it was read (lossy UTF-8), or `None` when the note does not quote it
    /// (a note about the whole file, or a finding past the first 100 000 quoted ones).
    pub fn text(&self) -> Option<String> {
        self.quoted.and_then(unquote)
    }
}

/// Takes a diagnostic's message apart (see the module's text). Only findings about a line
/// (`line > 0`) quote it; a message that does not read back as quoted text is all reason.
pub fn split_note(d: &Diagnostic) -> NoteParts<'_> {
    let m = d.message.as_str();
    let (head, quoted, cut) = match (d.line > 0).then(|| quoted_tail(m)).flatten() {
        Some((at, cut)) => {
            let end = m.len() - if cut { '…'.len_utf8() } else { 0 } - 1;
            (&m[..at - 2], m.get(at + 1..end), cut)
        }
        None => (m, None, false),
    };
    let (reason, detail) = DETAILED
        .iter()
        .find_map(|r| {
            let rest = head.strip_prefix(r)?.strip_prefix(": ")?;
            Some((&head[..r.len()], Some(rest)))
        })
        .unwrap_or((head, None));
    NoteParts {
        reason,
        detail,
        quoted,
        cut,
    }
}

/// Where the quoted text at the end of `m` opens (the index of its `"`, after `: `), and whether
/// it is marked cut; `None` if `m` does not end with text quoted that way.
fn quoted_tail(m: &str) -> Option<(usize, bool)> {
    let cut = m.ends_with('…');
    let body = if cut {
        &m[..m.len() - '…'.len_utf8()]
    } else {
        m
    };
    let close = body.len().checked_sub(1)?;
    if !body.ends_with('"') {
        return None;
    }
    let bytes = body.as_bytes();
    // Inside the quotes every `"` is escaped (`\"`): the opening quote is the last one before
    // the closing quote that follows an even number of backslashes.
    let mut i = close;
    while i > 0 {
        i -= 1;
        if bytes[i] != b'"' {
            continue;
        }
        let slashes = bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count();
        if slashes % 2 == 0 {
            let opens = i >= 2 && &bytes[i - 2..i] == b": ";
            return (opens && unquote(&body[i + 1..close]).is_some()).then_some((i, cut));
        }
    }
    None
}

/// Reads back text quoted by `{:?}` (without its quotes): `None` if it is not such text.
fn unquote(q: &str) -> Option<String> {
    let mut out = String::with_capacity(q.len());
    let mut chars = q.chars();
    while let Some(c) = chars.next() {
        if c == '"' {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '0' => '\0',
            't' => '\t',
            'r' => '\r',
            'n' => '\n',
            c @ ('\\' | '"' | '\'') => c,
            'u' => {
                if chars.next()? != '{' {
                    return None;
                }
                let mut hex = String::new();
                loop {
                    match chars.next()? {
                        '}' => break,
                        h if h.is_ascii_hexdigit() && hex.len() < 6 => hex.push(h),
                        _ => return None,
                    }
                }
                char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
            }
            _ => return None,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Severity;

    fn note(line: u64, m: &str) -> Diagnostic {
        Diagnostic::new("a.log", line, Severity::Warning, m)
    }

    /// Whatever a line holds, its note gives back the reason, the detail and the line's start.
    #[test]
    fn a_quoted_line_reads_back() {
        let long = "x".repeat(200);
        let lines: Vec<&[u8]> = vec![
            b"plain text",
            b"",
            b"quotes \" and \\\" and \\ at the end \\",
            b"ends with a quote\"",
            b": \"looks like a quote\"",
            b"<img src=x onerror=alert(1)>",
            b"\x00\x01\xff\xfe binary \t tab \r",
            "caf\u{e9} \u{301}accent \u{200b}zero width \u{1F600}".as_bytes(),
            long.as_bytes(),
        ];
        for line in lines {
            let want = String::from_utf8_lossy(line.get(..EXCERPT).unwrap_or(line)).into_owned();
            for (head, reason, detail) in [
                ("line skipped: not an NCCL line", "line skipped: not an NCCL line", None),
                (
                    "per-collective line printed twice (counted twice): AllReduce opCount 5 comm 0x1",
                    PRINTED_TWICE,
                    Some("AllReduce opCount 5 comm 0x1"),
                ),
                (
                    "line skipped: per-collective line with an operation this build does not know: Fo\"o: \"x",
                    SKIPPED_UNKNOWN_OP,
                    Some("Fo\"o: \"x"),
                ),
            ] {
                let d = note(7, &format!("{head}: {}", excerpt(line)));
                let p = split_note(&d);
                assert_eq!(p.reason, reason, "{d:?}");
                assert_eq!(p.detail, detail, "{d:?}");
                assert_eq!(p.text().as_deref(), Some(want.as_str()), "{d:?}");
                assert_eq!(p.cut, line.len() > EXCERPT, "{d:?}");
            }
        }
    }

    #[test]
    fn notes_without_a_quote_are_all_reason() {
        for (line, m) in [
            (
                0,
                "12 more lines: per-collective line printed twice (counted twice)",
            ),
            (0, "table \"x\": \"missing\""),
            (3, "line skipped: not an NCCL line"),
            (3, "something: \"unterminated"),
            (3, "bad escape: \"a\\qb\""),
            (3, "no separator\"a\""),
        ] {
            let d = note(line, m);
            let p = split_note(&d);
            assert_eq!((p.reason, p.detail, p.text()), (m, None, None), "{m}");
        }
    }
}
