//! A table scan fetched in batches, each batch's rows packed into one text by SQLite itself.
//!
//! Why: in the page every cell of a row crosses from sql.js's wasm to ours as a JavaScript
//! value (a BigInt per integer), one `get()` per row; an export's kernel table is millions of
//! rows of a dozen integers, and that crossing, not SQLite, was nearly all of the read. Asked
//! for `group_concat` of `quote()`d cells, SQLite writes a batch of rows into one string in
//! its own code, and one string crosses per batch.
//!
//! The format is SQLite's SQL literal syntax: `quote()` writes NULL as `NULL`, integers in
//! decimal, reals with as many digits as round-trip exactly, text in single quotes (a quote
//! doubled), blobs as `X'hex'`; cells are joined by `,` and rows by a newline (both may occur
//! inside a quoted text, which the reader skips over). Rows come in rowid order, a batch at a
//! time (`rowid > last` and `LIMIT`), so a batch costs its own rows, not a scan from the start.

use crate::{Row, SqlError, SqlSource, TableScan, Value};

/// The query of one batch: rows of `scan` after rowid `after`, at most `limit` of them, as one
/// packed text, the batch's last rowid and its row count.
pub fn batch_sql(scan: &TableScan<'_>, after: i64, limit: usize) -> String {
    let cells: Vec<String> = scan.columns.iter().map(|c| format!("quote({c})")).collect();
    let a = scan.alias;
    format!(
        "SELECT group_concat(line, char(10) ORDER BY rid), max(rid), count(*) FROM \
         (SELECT {a}.rowid AS rid, {line} AS line FROM {table} AS {a} \
          WHERE ({filter}) AND {a}.rowid > {after} ORDER BY {a}.rowid LIMIT {limit})",
        line = cells.join(" || ',' || "),
        table = scan.table,
        filter = scan.filter,
    )
}

/// Runs `scan` on `db` a batch at a time and hands each row to `row_fn`, as
/// [`SqlSource::for_each`] over [`TableScan::sql`] would. `limit` rows per batch.
pub fn scan_packed(
    db: &dyn SqlSource,
    scan: &TableScan<'_>,
    limit: usize,
    row_fn: &mut dyn FnMut(&dyn Row) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    let mut after = i64::MIN;
    let mut cells: Vec<Cell> = Vec::new();
    loop {
        let mut batch: Option<(String, i64, i64)> = None;
        db.for_each(&batch_sql(scan, after, limit.max(1)), &mut |r| {
            let text = r.value(0).as_str().unwrap_or_default().to_string();
            batch = Some((text, r.int(1).unwrap_or(after), r.int(2).unwrap_or(0)));
            Ok(())
        })?;
        let Some((text, last, count)) = batch else {
            return Ok(());
        };
        if count <= 0 {
            return Ok(());
        }
        let mut rows = 0i64;
        let mut rest = text.as_str();
        while !rest.is_empty() {
            rest = read_row(rest, &mut cells)?;
            rows += 1;
            row_fn(&Cells(&cells))?;
        }
        if rows != count || last <= after {
            return Err(SqlError::new(format!(
                "packed batch after rowid {after}: {rows} rows read of {count}"
            )));
        }
        after = last;
        if (count as usize) < limit.max(1) {
            return Ok(());
        }
    }
}

/// One cell of a packed row, owned so that [`Value`]s can borrow it.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

struct Cells<'a>(&'a [Cell]);

impl Row for Cells<'_> {
    fn column_count(&self) -> usize {
        self.0.len()
    }

    fn value(&self, i: usize) -> Value<'_> {
        match self.0.get(i) {
            None | Some(Cell::Null) => Value::Null,
            Some(Cell::Integer(v)) => Value::Integer(*v),
            Some(Cell::Real(r)) => Value::Real(*r),
            Some(Cell::Text(s)) => Value::Text(s),
            Some(Cell::Blob(b)) => Value::Blob(b),
        }
    }

    fn int(&self, i: usize) -> Option<i64> {
        match self.0.get(i)? {
            Cell::Integer(v) => Some(*v),
            Cell::Real(r) => Some(*r as i64),
            _ => None,
        }
    }
}

fn bad(what: &str) -> SqlError {
    SqlError::new(format!("packed rows: {what}"))
}

/// Reads one row off the front of `text` into `cells`; returns what follows its newline.
fn read_row<'t>(text: &'t str, cells: &mut Vec<Cell>) -> Result<&'t str, SqlError> {
    cells.clear();
    let mut rest = text;
    loop {
        let (cell, after) = read_cell(rest)?;
        cells.push(cell);
        match after.as_bytes().first() {
            Some(b',') => rest = &after[1..],
            Some(b'\n') => return Ok(&after[1..]),
            None => return Ok(after),
            Some(_) => return Err(bad("a cell is followed by neither ',' nor a newline")),
        }
    }
}

/// One `quote()`d cell off the front of `s`, and what follows it.
fn read_cell(s: &str) -> Result<(Cell, &str), SqlError> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'\'') => {
            // Text: to the quote that is not doubled.
            let mut out = String::new();
            let mut i = 1;
            loop {
                let rel = s[i..]
                    .find('\'')
                    .ok_or_else(|| bad("an unterminated text"))?;
                out.push_str(&s[i..i + rel]);
                i += rel + 1;
                if b.get(i) == Some(&b'\'') {
                    out.push('\'');
                    i += 1;
                } else {
                    return Ok((Cell::Text(out), &s[i..]));
                }
            }
        }
        Some(b'X') if b.get(1) == Some(&b'\'') => {
            let end = s[2..]
                .find('\'')
                .ok_or_else(|| bad("an unterminated blob"))?
                + 2;
            let hex = &s.as_bytes()[2..end];
            if !hex.len().is_multiple_of(2) {
                return Err(bad("a blob of odd length"));
            }
            let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
            let blob = hex
                .chunks_exact(2)
                .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| bad("a blob with a non-hex digit"))?;
            Ok((Cell::Blob(blob), &s[end + 1..]))
        }
        _ => {
            let end = b
                .iter()
                .position(|c| *c == b',' || *c == b'\n')
                .unwrap_or(b.len());
            let tok = &s[..end];
            let cell = if tok == "NULL" {
                Cell::Null
            } else if let Ok(v) = tok.parse::<i64>() {
                Cell::Integer(v)
            } else if let Ok(r) = tok.parse::<f64>() {
                Cell::Real(r)
            } else {
                return Err(bad("a cell that is no SQL literal"));
            };
            Ok((cell, &s[end..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_read_back() {
        let mut cells = Vec::new();
        let rest = read_row(
            "NULL,-9223372036854775808,1.5,'it''s, a\nline',X'00ff10',4.9406564584124654e-324\nNULL",
            &mut cells,
        )
        .unwrap();
        assert_eq!(
            cells,
            [
                Cell::Null,
                Cell::Integer(i64::MIN),
                Cell::Real(1.5),
                Cell::Text("it's, a\nline".into()),
                Cell::Blob(vec![0, 0xff, 0x10]),
                Cell::Real(f64::from_bits(1)),
            ]
        );
        assert_eq!(read_row(rest, &mut cells).unwrap(), "");
        assert_eq!(cells, [Cell::Null]);
        for garbage in ["'open", "X'0", "X'0g'", "1,2x", "abc", "1 2"] {
            assert!(read_row(garbage, &mut cells).is_err(), "{garbage}");
        }
    }
}
