//! NCCL kernels and the count of all other kernels.
//!
//! Reads `CUPTI_ACTIVITY_KIND_KERNEL` (timing, launch geometry, `globalPid`, `correlationId`),
//! joined with `StringIds` for the name (`demangledName`, else `shortName`, else `mangledName`:
//! the first the schema has), and `CUPTI_ACTIVITY_KIND_RUNTIME` for the CPU-side launch of each
//! NCCL kernel (same `correlationId` within the same process; NCCL launches through the driver
//! API `cuLaunchKernelEx`, so no filter on the API name). The NCCL filter is in SQL
//! (`lower(name) LIKE '%nccl%'`), and non-NCCL kernels are only counted, per pid and device, in
//! SQL: exports hold millions of compute kernels the viewer never draws one by one.

use crate::probe::{ident, int, pid_of, query, text, tid_of, Schema};
use model::nsys::{Kernel, OtherKernels};
use sqlsource::{SqlError, SqlSource};
use std::collections::HashSet;

pub(crate) const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub(crate) const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";

/// Kernel columns read when present; an absent one reads as 0/None.
pub(crate) const OPTIONAL_COLUMNS: &[&str] = &[
    "deviceId",
    "streamId",
    "correlationId",
    "globalPid",
    "gridX",
    "gridY",
    "gridZ",
    "blockX",
    "blockY",
    "blockZ",
    "staticSharedMemory",
    "dynamicSharedMemory",
    "registersPerThread",
    "localMemoryTotal",
];

/// The kernel column holding the `StringIds` id of the name, preferring the most complete name.
pub(crate) fn name_column(schema: &Schema) -> Option<&'static str> {
    ["demangledName", "shortName", "mangledName"]
        .into_iter()
        .find(|c| schema.has(KERNEL, c))
}

/// The SQL predicate selecting NCCL kernels by their joined name (alias `s`).
const IS_NCCL: &str = "lower(s.value) LIKE '%nccl%'";

/// `FROM ... JOIN StringIds` shared by the count and the row query, so both select the same set.
fn from_clause(name_col: &str) -> String {
    format!(
        "FROM {KERNEL} AS k JOIN StringIds AS s ON s.id = k.{}",
        ident(name_col)
    )
}

/// Counts NCCL kernels with one SQL COUNT. `Ok(0)` when the export has no kernel table.
pub fn count_nccl_kernels(db: &dyn SqlSource) -> Result<u64, SqlError> {
    let schema = Schema::load(db)?;
    count_with(db, &schema)
}

pub(crate) fn count_with(db: &dyn SqlSource, schema: &Schema) -> Result<u64, SqlError> {
    if !schema.has_table(KERNEL) {
        return Ok(0);
    }
    if !schema.has_table("StringIds") {
        return Err(SqlError::new(
            "table StringIds is missing: kernel names cannot be read",
        ));
    }
    let Some(name_col) = name_column(schema) else {
        return Err(SqlError::new(format!("{KERNEL} has no kernel-name column")));
    };
    let mut n = 0u64;
    let sql = format!("SELECT count(*) {} WHERE {IS_NCCL}", from_clause(name_col));
    query(db, &sql, |r| n = int(r.first()).unwrap_or(0).max(0) as u64)?;
    Ok(n)
}

/// Reads every NCCL kernel, ordered by pid then start, with its launch where the runtime table has it.
pub(crate) fn read_nccl_kernels(
    db: &dyn SqlSource,
    schema: &Schema,
    name_col: &str,
) -> Result<Vec<Kernel>, SqlError> {
    let c = |col: &str| schema.col_or_null(KERNEL, "k", col);
    let has_launch = schema.has(RUNTIME, "correlationId")
        && schema.has(RUNTIME, "start")
        && schema.has(RUNTIME, "globalTid")
        && schema.has(KERNEL, "correlationId")
        && schema.has(KERNEL, "globalPid");
    // Pre-aggregated per (process, correlation id) so a duplicated runtime row cannot duplicate a
    // kernel, and limited to the NCCL kernels' correlation ids so a trace with millions of
    // runtime calls is not grouped whole; SQLite builds an automatic index for the join.
    let (launch_cols, launch_join) = if has_launch {
        (
            "r.launch_start, r.launch_tid",
            format!(
                "LEFT JOIN (SELECT correlationId AS cid, globalTid >> 24 AS gp, \
                 min(start) AS launch_start, min(globalTid) AS launch_tid \
                 FROM {RUNTIME} WHERE correlationId IN \
                 (SELECT k.correlationId {from} WHERE {IS_NCCL}) \
                 GROUP BY correlationId, globalTid >> 24) AS r \
                 ON r.cid = k.correlationId AND r.gp = (k.globalPid >> 24)",
                from = from_clause(name_col),
            ),
        )
    } else {
        ("NULL, NULL", String::new())
    };
    let sql = format!(
        "SELECT k.start, k.\"end\", {dev}, {stream}, {corr}, {gpid}, s.value, \
         {gx}, {gy}, {gz}, {bx}, {by}, {bz}, {ssm}, {dsm}, {regs}, {lmt}, {launch_cols} \
         {from} {launch_join} WHERE {IS_NCCL} ORDER BY {gpid}, k.start",
        dev = c("deviceId"),
        stream = c("streamId"),
        corr = c("correlationId"),
        gpid = c("globalPid"),
        gx = c("gridX"),
        gy = c("gridY"),
        gz = c("gridZ"),
        bx = c("blockX"),
        by = c("blockY"),
        bz = c("blockZ"),
        ssm = c("staticSharedMemory"),
        dsm = c("dynamicSharedMemory"),
        regs = c("registersPerThread"),
        lmt = c("localMemoryTotal"),
        from = from_clause(name_col),
    );
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    query(db, &sql, |r| {
        let u = |i: usize| int(r.get(i)).unwrap_or(0).max(0) as u32;
        let (Some(start_ns), Some(end_ns)) = (int(r.first()), int(r.get(1))) else {
            return;
        };
        let k = Kernel {
            pid: int(r.get(5)).map(pid_of).unwrap_or(0),
            start_ns,
            end_ns,
            device: u(2),
            stream: u(3),
            correlation_id: u(4),
            name: text(r.get(6)).unwrap_or_default(),
            grid: [u(7), u(8), u(9)],
            block: [u(10), u(11), u(12)],
            static_shared_bytes: u(13),
            dynamic_shared_bytes: u(14),
            registers_per_thread: u(15),
            local_memory_total: int(r.get(16)).unwrap_or(0).max(0) as u64,
            launch_ns: int(r.get(17)),
            launch_tid: int(r.get(18)).map(tid_of),
        };
        // Exact duplicate rows (a re-exported or merged file) would double-count operations.
        if seen.insert((
            k.pid,
            k.device,
            k.stream,
            k.correlation_id,
            k.start_ns,
            k.end_ns,
        )) {
            out.push(k);
        }
    })?;
    Ok(out)
}

/// Counts the non-NCCL kernels per (pid, device) and sums their durations, in SQL.
/// A kernel whose name id is missing from `StringIds` counts as non-NCCL.
pub(crate) fn read_other_kernels(
    db: &dyn SqlSource,
    schema: &Schema,
    name_col: &str,
) -> Result<Vec<OtherKernels>, SqlError> {
    let gpid = schema.col_or_null(KERNEL, "k", "globalPid");
    let dev = schema.col_or_null(KERNEL, "k", "deviceId");
    let sql = format!(
        "SELECT ({gpid} >> 24) & 16777215 AS pid, {dev} AS dev, count(*), sum(k.\"end\" - k.start) \
         FROM {KERNEL} AS k LEFT JOIN StringIds AS s ON s.id = k.{name} \
         WHERE s.value IS NULL OR NOT ({IS_NCCL}) GROUP BY 1, 2 ORDER BY 1, 2",
        name = ident(name_col),
    );
    let mut out = Vec::new();
    query(db, &sql, |r| {
        out.push(OtherKernels {
            pid: int(r.first()).unwrap_or(0) as u32,
            device: int(r.get(1)).unwrap_or(0).max(0) as u32,
            count: int(r.get(2)).unwrap_or(0).max(0) as u64,
            total_ns: int(r.get(3)).unwrap_or(0),
        })
    })?;
    Ok(out)
}
