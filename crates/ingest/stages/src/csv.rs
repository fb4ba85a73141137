//! The CSV shape: a header naming the four columns, then one row per line.

use crate::reader::RawRow;
use crate::COLUMNS;
use std::borrow::Cow;

/// Where each of the four columns is in a row, and how many columns the header has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Column index of `step`, `rank`, `stage`, `duration_ms`, in [`COLUMNS`] order.
    pub at: [usize; 4],
}

impl Header {
    /// The header of `line`, if it names all four columns (case and surrounding blanks ignored,
    /// quotes allowed, extra columns allowed).
    pub fn parse(line: &[u8]) -> Option<Header> {
        let text = std::str::from_utf8(line).ok()?;
        let names: Vec<String> = fields(text)
            .into_iter()
            .map(|f| f.trim().to_ascii_lowercase())
            .collect();
        let mut at = [0usize; 4];
        for (slot, want) in at.iter_mut().zip(COLUMNS) {
            *slot = names.iter().position(|n| n == want)?;
        }
        Some(Header { at })
    }

    /// The four cells of a data line, `None` for a cell the line does not have.
    pub fn row<'a>(&self, line: &'a str) -> RawRow<'a> {
        if !line.contains('"') {
            // The common case, split in place with nothing allocated.
            let mut cells: [Option<&'a str>; 4] = [None; 4];
            for (i, cell) in line.split(',').enumerate() {
                for (slot, &at) in cells.iter_mut().zip(&self.at) {
                    if at == i {
                        *slot = Some(cell.trim()).filter(|c| !c.is_empty());
                    }
                }
            }
            let [step, rank, stage, duration] = cells.map(|c| c.map(Cow::Borrowed));
            return RawRow {
                step,
                rank,
                stage,
                duration,
            };
        }
        let cells = fields(line);
        let get = |i: usize| -> Option<Cow<'a, str>> {
            let c = cells.get(i)?;
            let t = match c {
                Cow::Borrowed(s) => Cow::Borrowed(s.trim()),
                Cow::Owned(s) => Cow::Owned(s.trim().to_string()),
            };
            (!t.is_empty()).then_some(t)
        };
        RawRow {
            step: get(self.at[0]),
            rank: get(self.at[1]),
            stage: get(self.at[2]),
            duration: get(self.at[3]),
        }
    }
}

/// Splits a CSV line into cells: commas separate, `"..."` quotes a cell (a doubled `""` inside is
/// one quote). A line without quotes is split in place.
pub(crate) fn fields(line: &str) -> Vec<Cow<'_, str>> {
    if !line.contains('"') {
        return line.split(',').map(Cow::Borrowed).collect();
    }
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(Cow::Owned(std::mem::take(&mut cell))),
            (c, _) => cell.push(c),
        }
    }
    out.push(Cow::Owned(cell));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_in_any_order_with_extra_columns() {
        let h = Header::parse(b"host, Duration_MS ,rank,stage,step").unwrap();
        assert_eq!(h.at, [4, 2, 3, 1]);
        let r = h.row("node1,12.5,3,\"fwd, loss\",7");
        assert_eq!(r.step.as_deref(), Some("7"));
        assert_eq!(r.rank.as_deref(), Some("3"));
        assert_eq!(r.stage.as_deref(), Some("fwd, loss"));
        assert_eq!(r.duration.as_deref(), Some("12.5"));
        // A short line lacks its last cells; an empty cell is missing too.
        let r = h.row("node1,,3");
        assert_eq!((r.duration, r.stage, r.step), (None, None, None));
        assert!(Header::parse(b"step,rank,stage").is_none());
    }

    #[test]
    fn quoted_cells() {
        assert_eq!(
            fields(r#"a,"b,c","say ""hi""",d"#),
            vec!["a", "b,c", "say \"hi\"", "d"]
        );
    }
}
