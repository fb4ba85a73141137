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

/// Rows per row group: large enough for engines to scan fast, small enough to bound the
/// writer's buffers.
const ROW_GROUP_ROWS: usize = 1 << 20;

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
    let schema = parse_message_type(&schema()).map_err(|e| e.to_string())?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by("ncclscope".into())
        .build();
    let mut writer = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props))
        .map_err(|e| e.to_string())?;
    for rows in records.kernels.chunks(ROW_GROUP_ROWS) {
        let mut group = writer.next_row_group().map_err(|e| e.to_string())?;
        for c in COLUMNS {
            let mut col = group
                .next_column()
                .map_err(|e| e.to_string())?
                .ok_or("the schema has fewer columns than the writer")?;
            write_column(&mut col, c, rows)?;
            col.close().map_err(|e| e.to_string())?;
        }
        group.close().map_err(|e| e.to_string())?;
    }
    writer.close().map_err(|e| e.to_string())?;
    Ok(())
}

/// One column of one row group: the present values, and a definition level per row (1 present,
/// 0 null) for optional columns.
fn write_column(
    col: &mut parquet::file::writer::SerializedColumnWriter<'_>,
    c: &Column,
    rows: &[KernelRecord],
) -> Result<(), String> {
    let levels = |present: &[bool]| -> Vec<i16> { present.iter().map(|&p| i16::from(p)).collect() };
    macro_rules! typed {
        ($ty:ty, $get:ident, $conv:expr) => {{
            let cells: Vec<_> = rows.iter().map(|r| c.$get(r)).collect();
            let present: Vec<bool> = cells.iter().map(|v| v.is_some()).collect();
            let values: Vec<_> = cells.into_iter().flatten().map($conv).collect();
            let def = levels(&present);
            col.typed::<$ty>()
                .write_batch(&values, c.optional.then_some(&def[..]), None)
                .map_err(|e| e.to_string())?;
        }};
    }
    match c.kind {
        columns::Kind::Int32 => typed!(Int32Type, int, |v: i64| v as i32),
        columns::Kind::Int64 => typed!(Int64Type, int, |v: i64| v),
        columns::Kind::Double => typed!(DoubleType, float, |v: f64| v),
        columns::Kind::Bool => typed!(BoolType, boolean, |v: bool| v),
        columns::Kind::Text => typed!(ByteArrayType, text, |v: String| ByteArray::from(v.as_str())),
    }
    Ok(())
}
