//! Processes, hosts, GPUs and the session's start time.
//!
//! - `PROCESSES (globalPid, pid, name)`: holds every process the host sampled (1667 rows in one
//!   real file), so only those that ran kernels (`CUPTI_ACTIVITY_KIND_KERNEL.globalPid`) or
//!   emitted NVTX (`NVTX_EVENTS.globalTid`) are kept.
//! - `TARGET_INFO_SYSTEM_ENV (name = 'Hostname', value)`: the host name, the node's identity.
//! - `TARGET_INFO_GPU (id, name, busLocation, cuDevice)`: GPU names and PCI bus ids (absent in
//!   schema 3.25 exports); `TARGET_INFO_CUDA_DEVICE (gpuId, cudaId, pid)` maps a process' CUDA
//!   ordinal to a GPU (schema 3.17+).
//! - `TARGET_INFO_SESSION_START_TIME (utcEpochNs, systemClockNs)` and, where `systemClockNs` is
//!   absent (before 3.25), `ANALYSIS_DETAILS.startTime`: the pair that turns host-clock
//!   timestamps into wall time.

use crate::kernels::KERNEL;
use crate::probe::{ident, int, pid_of, query, text, Schema};
use model::nsys::{CudaDeviceMap, Gpu, Process, SessionStart};
use sqlsource::{SqlError, SqlSource};

/// `kernel_global_pids`: the distinct `globalPid`s of the kernel table, already collected while
/// reading kernels (a second `SELECT DISTINCT` over millions of kernel rows costs a full sort).
pub(crate) fn read_processes(
    db: &dyn SqlSource,
    schema: &Schema,
    kernel_global_pids: &[i64],
) -> Result<Vec<Process>, SqlError> {
    if !schema.has("PROCESSES", "globalPid") {
        return Ok(Vec::new());
    }
    let mut sources = Vec::new();
    if schema.has(KERNEL, "globalPid") && !kernel_global_pids.is_empty() {
        let values: Vec<String> = kernel_global_pids
            .iter()
            .map(|g| format!("({g})"))
            .collect();
        sources.push(format!(
            "SELECT column1 AS g FROM (VALUES {})",
            values.join(", ")
        ));
    }
    if schema.has("NVTX_EVENTS", "globalTid") {
        // Low 24 bits (the thread) cleared: a globalPid.
        sources.push("SELECT DISTINCT (globalTid >> 24) << 24 AS g FROM NVTX_EVENTS".to_string());
    }
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let name = schema.col_or_null("PROCESSES", "p", "name");
    let sql = format!(
        "SELECT p.globalPid, {name} FROM PROCESSES AS p \
         WHERE p.globalPid IN ({}) ORDER BY p.globalPid",
        sources.join(" UNION ")
    );
    let mut out: Vec<Process> = Vec::new();
    query(db, &sql, |r| {
        let Some(g) = int(r.first()) else { return };
        let pid = pid_of(g);
        // A pid listed twice (renamed after exec) keeps its first name.
        if !out.iter().any(|p| p.pid == pid) {
            out.push(Process {
                pid,
                name: text(r.get(1)).unwrap_or_default(),
            });
        }
    })?;
    Ok(out)
}

pub(crate) fn read_hosts(db: &dyn SqlSource, schema: &Schema) -> Result<Vec<String>, SqlError> {
    if !(schema.has("TARGET_INFO_SYSTEM_ENV", "name")
        && schema.has("TARGET_INFO_SYSTEM_ENV", "value"))
    {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    query(
        db,
        "SELECT DISTINCT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' ORDER BY value",
        |r| out.extend(text(r.first())),
    )?;
    Ok(out)
}

pub(crate) fn read_gpus(db: &dyn SqlSource, schema: &Schema) -> Result<Vec<Gpu>, SqlError> {
    const T: &str = "TARGET_INFO_GPU";
    if !schema.has(T, "id") {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT g.id, {}, {}, {} FROM {T} AS g ORDER BY g.id",
        schema.col_or_null(T, "g", "name"),
        schema.col_or_null(T, "g", "busLocation"),
        schema.col_or_null(T, "g", "cuDevice"),
    );
    let mut out: Vec<Gpu> = Vec::new();
    query(db, &sql, |r| {
        let Some(id) = int(r.first()) else { return };
        let gpu = Gpu {
            id: id as u32,
            name: text(r.get(1)),
            bus_id: text(r.get(2)),
            cuda_device: int(r.get(3)).map(|d| d as u32),
        };
        // Multi-VM exports repeat ids per vmId; one row per GPU is enough here.
        if !out.contains(&gpu) {
            out.push(gpu);
        }
    })?;
    Ok(out)
}

pub(crate) fn read_cuda_devices(
    db: &dyn SqlSource,
    schema: &Schema,
) -> Result<Vec<CudaDeviceMap>, SqlError> {
    const T: &str = "TARGET_INFO_CUDA_DEVICE";
    if !(schema.has(T, "cudaId") && schema.has(T, "pid")) {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {}, d.cudaId, d.pid FROM {T} AS d ORDER BY d.pid, d.cudaId",
        schema.col_or_null(T, "d", "gpuId")
    );
    let mut out = Vec::new();
    query(db, &sql, |r| {
        if let (Some(cuda), Some(pid)) = (int(r.get(1)), int(r.get(2))) {
            out.push(CudaDeviceMap {
                gpu_id: int(r.first()).map(|g| g as u32),
                cuda_device: cuda as u32,
                pid: pid as u32,
            });
        }
    })?;
    Ok(out)
}

pub(crate) fn read_session_start(
    db: &dyn SqlSource,
    schema: &Schema,
) -> Result<Option<SessionStart>, SqlError> {
    const T: &str = "TARGET_INFO_SESSION_START_TIME";
    if !schema.has(T, "utcEpochNs") {
        return Ok(None);
    }
    let mut out = None;
    let sql = format!(
        "SELECT utcEpochNs, {} FROM {T} AS t LIMIT 1",
        schema.col_or_null(T, "t", "systemClockNs")
    );
    query(db, &sql, |r| {
        if let Some(utc) = int(r.first()) {
            out = Some(SessionStart {
                utc_epoch_ns: utc,
                host_clock_ns: int(r.get(1)),
            });
        }
    })?;
    if let Some(s) = out.as_mut().filter(|s| s.host_clock_ns.is_none()) {
        if schema.has("ANALYSIS_DETAILS", "startTime") {
            let sql = format!("SELECT min({}) FROM ANALYSIS_DETAILS", ident("startTime"));
            query(db, &sql, |r| s.host_clock_ns = int(r.first()))?;
        }
    }
    Ok(out)
}
