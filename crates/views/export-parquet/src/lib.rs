//! The enriched NCCL kernels as one Apache Parquet file: the interface of `ncclscope analyze` to
//! engines that query many ranks at once (DuckDB on one machine, Dask or Spark on a cluster).
//!
//! Why Parquet and per-node files: a 1024-rank run is too large for one process to hold, but
//! each node's logs and export can be analysed as an independent job (a Slurm job array), each
//! writing one file; an engine then reads all of them as one table. Columns are typed (no JSON
//! in cells), snake_case, one row per NCCL kernel, the same records as the CSV and the Chrome
//! trace ([`export::kernel_records`]).
//!
//! Cross-node queries without cross-node clocks: each per-node job synchronises only the ranks
//! it sees. The members of one collective instance (`comm_id`, `op_count`) finish together, so
//! the member whose kernel ran shortest arrived last; `end_ns − start_ns` compares across nodes
//! whatever their clocks (see `docs/SCALE.md`).

mod columns;

use columns::{Column, COLUMNS};
use export::{KernelRecord, Records};
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::io::Write;
use std::sync::Arc;

/// Rows per row group: large enough for engines to scan fast, small enough to bound the writer's
/// buffers (the cells of one group, a few hundred bytes a row). DuckDB's own row groups have as
/// many rows.
const ROW_GROUP_ROWS: usize = 122_880;

/// The Parquet schema of [`write_parquet`], in Parquet's message syntax.
pub fn schema() -> String {
    let mut s = String::from("message nccl_kernels {\n");
    for c in COLUMNS {
        s.push_str(&format!("  {};\n", c.parquet_type()));
    }
    s.push('}');
    s
}

/// Writes every kernel record as one row. Errors are Parquet's (I/O included), as text.
pub fn write_parquet<W: Write + Send>(records: &Records, out: W) -> Result<(), String> {
    let mut w = ParquetWriter::new(out)?;
    w.write(&records.kernels)?;
    w.finish()
}

/// The file written as the records come (one rank's at a time: [`export::records_by_rank`]): each
/// record's cells are converted to the columns' types as it is given (a few hundred bytes a row,
/// where the record is a few KB) and written as a row group every [`ROW_GROUP_ROWS`] rows, so that
/// the file is the same however the records are split between calls.
pub struct ParquetWriter<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    /// The cells of the rows not yet written, a column each (in [`COLUMNS`] order).
    cells: Vec<Cells>,
    rows: usize,
}

impl<W: Write + Send> ParquetWriter<W> {
    pub fn new(out: W) -> Result<Self, String> {
        let schema = parse_message_type(&schema()).map_err(|e| e.to_string())?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by("ncclscope".into())
            .build();
        let writer = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props))
            .map_err(|e| e.to_string())?;
        Ok(ParquetWriter {
            writer,
            cells: COLUMNS.iter().map(|c| Cells::of(c.kind)).collect(),
            rows: 0,
        })
    }

    /// Adds `kernels` as rows, writing a row group whenever one is full.
    pub fn write(&mut self, kernels: &[KernelRecord]) -> Result<(), String> {
        for r in kernels {
            for (cells, c) in self.cells.iter_mut().zip(COLUMNS) {
                cells.push(c, r);
            }
            self.rows += 1;
            if self.rows == ROW_GROUP_ROWS {
                self.write_group()?;
            }
        }
        Ok(())
    }

    /// Writes the rows given so far as one row group.
    fn write_group(&mut self) -> Result<(), String> {
        let mut group = self.writer.next_row_group().map_err(|e| e.to_string())?;
        for (cells, c) in self.cells.iter_mut().zip(COLUMNS) {
            let mut col = group
                .next_column()
                .map_err(|e| e.to_string())?
                .ok_or("the schema has fewer columns than the writer")?;
            cells.write(&mut col, c)?;
            col.close().map_err(|e| e.to_string())?;
        }
        group.close().map_err(|e| e.to_string())?;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last rows and the file's footer.
    pub fn finish(mut self) -> Result<(), String> {
        if self.rows > 0 {
            self.write_group()?;
        }
        self.writer.close().map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// One column's cells of the rows not yet written, as the column's type reads them.
enum Cells {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Text(Vec<Option<String>>),
}

impl Cells {
    fn of(kind: columns::Kind) -> Cells {
        match kind {
            columns::Kind::Int32 | columns::Kind::Int64 => Cells::Int(Vec::new()),
            columns::Kind::Double => Cells::Float(Vec::new()),
            columns::Kind::Bool => Cells::Bool(Vec::new()),
            columns::Kind::Text => Cells::Text(Vec::new()),
        }
    }

    fn push(&mut self, c: &Column, r: &KernelRecord) {
        match self {
            Cells::Int(v) => v.push(c.int(r)),
            Cells::Float(v) => v.push(c.float(r)),
            Cells::Bool(v) => v.push(c.boolean(r)),
            Cells::Text(v) => v.push(c.text(r)),
        }
    }

    /// Writes the cells as one column chunk (the present values, and a definition level per
    /// row, 1 present and 0 null, for optional columns) and empties them.
    fn write(
        &mut self,
        col: &mut parquet::file::writer::SerializedColumnWriter<'_>,
        c: &Column,
    ) -> Result<(), String> {
        macro_rules! typed {
            ($cells:expr, $ty:ty, $conv:expr) => {{
                let cells = std::mem::take($cells);
                let def: Vec<i16> = cells.iter().map(|v| i16::from(v.is_some())).collect();
                let values: Vec<_> = cells.into_iter().flatten().map($conv).collect();
                col.typed::<$ty>()
                    .write_batch(&values, c.optional.then_some(&def[..]), None)
                    .map_err(|e| e.to_string())?;
            }};
        }
        match (self, c.kind) {
            (Cells::Int(v), columns::Kind::Int32) => typed!(v, Int32Type, |v: i64| v as i32),
            (Cells::Int(v), _) => typed!(v, Int64Type, |v: i64| v),
            (Cells::Float(v), _) => typed!(v, DoubleType, |v: f64| v),
            (Cells::Bool(v), _) => typed!(v, BoolType, |v: bool| v),
            (Cells::Text(v), _) => {
                typed!(v, ByteArrayType, |v: String| ByteArray::from(v.as_str()))
            }
        }
        Ok(())
    }
}
