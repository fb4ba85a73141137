//! The enriched kernels as CSV (RFC 4180): one row per NCCL kernel, the contract's field names
//! as header, for spreadsheets and pandas.
//!
//! Why quoting matters: kernel names carry commas and angle brackets
//! (`ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)`, templates with `, `), and hosts
//! or NVTX text may carry anything; an unquoted comma would shift every later column.

use crate::enriched::{kernel_records, KernelRecord, Records};
use crate::fields::{all_fields, DURATION_NS, END_NS, NAME, START_NS};
use load::Session;
use pipeline::Analysis;
use serde_json::Value;
use std::borrow::Cow;
use std::io::Write;

/// The session's enriched kernels as CSV text (CRLF line ends, as RFC 4180 has them).
pub fn enriched_csv(session: &Session, analysis: &Analysis) -> String {
    csv_of(&kernel_records(session, analysis))
}

/// The CSV for already built records.
pub fn csv_of(records: &Records) -> String {
    let mut w = CsvWriter::new(Vec::new()).expect("writing to memory");
    w.write(&records.kernels).expect("writing to memory");
    let bytes = w.finish().expect("writing to memory");
    String::from_utf8(bytes).expect("every cell is text")
}

/// The CSV written as the records come (one rank's at a time: [`crate::records_by_rank`]), to any
/// writer: the header first, then a row per kernel.
pub struct CsvWriter<W: Write> {
    out: W,
    /// One row's text, reused.
    row: String,
}

impl<W: Write> CsvWriter<W> {
    /// Writes the header.
    pub fn new(out: W) -> std::io::Result<Self> {
        let mut w = CsvWriter {
            out,
            row: String::new(),
        };
        let header: Vec<&str> = [NAME, START_NS, END_NS, DURATION_NS]
            .into_iter()
            .chain(all_fields())
            .collect();
        push_row(&mut w.row, header.iter().map(|h| Cow::Borrowed(*h)));
        w.flush_row()?;
        Ok(w)
    }

    /// Writes a row per record.
    pub fn write(&mut self, kernels: &[KernelRecord]) -> std::io::Result<()> {
        for k in kernels {
            let timing = [
                k.name.clone(),
                k.start_ns.to_string(),
                k.end_ns.to_string(),
                (k.end_ns - k.start_ns).to_string(),
            ];
            let fields = all_fields().map(|f| cell(k.args.get(f).unwrap_or(&Value::Null)));
            push_row(
                &mut self.row,
                timing.into_iter().map(Cow::Owned).chain(fields),
            );
            self.flush_row()?;
        }
        Ok(())
    }

    /// Flushes and gives the writer back.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    fn flush_row(&mut self) -> std::io::Result<()> {
        self.out.write_all(self.row.as_bytes())?;
        self.row.clear();
        Ok(())
    }
}

fn push_row<'a>(out: &mut String, cells: impl Iterator<Item = Cow<'a, str>>) {
    for (i, c) in cells.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&csv_field(&c));
    }
    out.push_str("\r\n");
}

/// A JSON value as CSV text: null empty, strings raw, numbers and booleans as JSON prints them.
fn cell(v: &Value) -> Cow<'static, str> {
    match v {
        Value::Null => Cow::Borrowed(""),
        Value::String(s) => Cow::Owned(s.clone()),
        other => Cow::Owned(other.to_string()),
    }
}

/// One field, quoted when it holds a comma, a quote or a line break (quotes doubled).
pub fn csv_field(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field(""), "");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("cr\r"), "\"cr\r\"");
        assert_eq!(csv_field("k<int, \"q\">"), "\"k<int, \"\"q\"\">\"");
    }

    #[test]
    fn empty_records_give_the_header_only() {
        let text = csv_of(&Records::default());
        assert_eq!(text.matches("\r\n").count(), 1);
        assert!(text.starts_with("Name,Start (ns),End (ns),Duration (ns),CUDA Kernel,"));
    }

    #[test]
    fn cells_print_json_values_plainly() {
        assert_eq!(cell(&Value::Null), "");
        assert_eq!(cell(&serde_json::json!("x")), "x");
        assert_eq!(cell(&serde_json::json!(1.5)), "1.5");
        assert_eq!(cell(&serde_json::json!(42)), "42");
    }
}
