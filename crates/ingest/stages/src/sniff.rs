//! Recognising a stage file from its first bytes.

use crate::{csv, jsonl};

/// Whether `head` (a file's first bytes, or all of a short file) starts a stage file: its first
/// non-blank line is the CSV header `step,rank,stage,duration_ms` (any order, extra columns
/// allowed) or a complete JSON object with those four keys.
pub fn is_stage_file(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let Some(line) = first_line(head) else {
        return false;
    };
    csv::Header::parse(line).is_some() || jsonl::is_stage_object(line)
}

/// The first non-blank line, without its line end; `None` when the head holds none complete
/// (a line cut at the end of the head counts only if the head is shorter than a sniff's worth,
/// i.e. it is the whole file).
fn first_line(head: &[u8]) -> Option<&[u8]> {
    let mut rest = head;
    loop {
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.iter().all(u8::is_ascii_whitespace) {
            return Some(line);
        }
        rest = next?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_both_shapes_by_content() {
        assert!(is_stage_file(
            b"step,rank,stage,duration_ms\n0,0,data,1.5\n"
        ));
        assert!(is_stage_file(
            b"\xEF\xBB\xBF\r\n Rank , STEP,duration_ms,stage,host\r\n"
        ));
        assert!(is_stage_file(
            b"\"step\",\"rank\",\"stage\",\"duration_ms\"\n"
        ));
        assert!(is_stage_file(
            b"\n{\"step\": 0, \"rank\": 3, \"stage\": \"data\", \"duration_ms\": 12.5}\n"
        ));
        // Not stage files: a log, a partial header, a Kineto trace, binary.
        assert!(!is_stage_file(
            b"node1:12:34 [0] NCCL INFO AllReduce: opCount 0\n"
        ));
        assert!(!is_stage_file(b"step,rank,duration_ms\n"));
        assert!(!is_stage_file(
            b"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"step\""
        ));
        assert!(!is_stage_file(b"{\"step\": 0, \"rank\": 1}\n"));
        assert!(!is_stage_file(b"SQLite format 3\0"));
        assert!(!is_stage_file(b""));
        assert!(!is_stage_file(b"\n\n  \n"));
    }
}
