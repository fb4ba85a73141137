//! The only module that touches the file system: writes a generated [`Run`] to a directory.

use crate::nsysdb::{global_pid, global_tid, NodeReport, Schema};
use crate::Run;
use rusqlite::{params, Connection};
use std::collections::HashMap;
use std::io;
use std::path::Path;

fn sql_err(e: rusqlite::Error) -> io::Error {
    io::Error::other(e)
}

/// Writes logs, one SQLite report per node and `truth.json` into `out_dir` (created if needed).
pub fn write_run(run: &Run, out_dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(out_dir)?;
    for (name, bytes) in &run.files {
        std::fs::write(out_dir.join(name), bytes)?;
    }
    for rep in &run.reports {
        let path = out_dir.join(format!("report_{}.sqlite", rep.host));
        if path.exists() {
            std::fs::remove_file(&path)?;
        }
        let mut conn = Connection::open(&path).map_err(sql_err)?;
        write_report(&mut conn, rep).map_err(sql_err)?;
    }
    std::fs::write(out_dir.join("truth.json"), run.truth_json())?;
    Ok(())
}

/// Fills an open (empty) database with one node's report.
pub fn write_report(conn: &mut Connection, rep: &NodeReport) -> rusqlite::Result<()> {
    conn.execute_batch(rep.schema.ddl())?;
    let tx = conn.transaction()?;
    {
        let mut strings: HashMap<String, i64> = HashMap::new();
        let mut ins_str = tx.prepare("INSERT INTO StringIds (id, value) VALUES (?1, ?2)")?;
        let mut sid = |s: &str, ins: &mut rusqlite::Statement| -> rusqlite::Result<i64> {
            if let Some(id) = strings.get(s) {
                return Ok(*id);
            }
            let id = strings.len() as i64 + 1;
            ins.execute(params![id, s])?;
            strings.insert(s.to_string(), id);
            Ok(id)
        };
        let launch = sid("cudaLaunchKernel", &mut ins_str)?;
        for (pid, dev, name) in &rep.processes {
            tx.execute(
                "INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?1, ?2, ?3)",
                params![global_pid(*pid), pid, name],
            )?;
            let tn = sid("python3", &mut ins_str)?;
            tx.execute(
                "INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?1, 0, ?2)",
                params![tn, global_tid(*pid, *pid)],
            )?;
            if rep.schema == Schema::V3_17 {
                tx.execute(
                    "INSERT INTO TARGET_INFO_CUDA_DEVICE (gpuId, cudaId, pid) VALUES (?1, ?2, ?3)",
                    params![dev, dev, pid],
                )?;
            }
        }
        if rep.schema == Schema::V3_17 {
            let mut devs: Vec<u32> = rep.processes.iter().map(|p| p.1).collect();
            devs.sort_unstable();
            devs.dedup();
            for d in devs {
                tx.execute(
                    "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, smCount, cuDevice, computeMajor, computeMinor) VALUES (0, ?1, 'NVIDIA A100-SXM4-80GB', ?2, 1, 108, ?1, 8, 0)",
                    params![d, format!("0000:{:02x}:00.0", 0x18 + d * 0x10)],
                )?;
            }
        }
        let mut ins_k = tx.prepare(match rep.schema {
            Schema::V3_17 => "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig) VALUES (?1, ?2, ?3, 1, NULL, ?4, ?5, ?6, ?7, ?8, ?9, 0, 0, ?10, ?11, 1, 1, ?12, 1, 1, ?13, ?14, 0, 0, ?15, 0, NULL, 1)",
            Schema::V3_25 => "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig, tensorSizeMinusOneElements) VALUES (?1, ?2, ?3, 1, NULL, ?4, ?5, ?6, ?7, ?8, ?9, 0, 0, ?10, ?11, 1, 1, ?12, 1, 1, ?13, ?14, 0, 0, ?15, 0, NULL, 1, '')",
        })?;
        let mut ins_r = tx.prepare(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue, callchainId) VALUES (?1, ?2, 1, ?3, ?4, ?5, 0, NULL)",
        )?;
        for (grid_id, k) in rep.kernels.iter().enumerate() {
            let d = sid(&k.demangled, &mut ins_str)?;
            let s = sid(&k.short, &mut ins_str)?;
            let m = sid(&k.mangled, &mut ins_str)?;
            ins_k.execute(params![
                k.start_ns,
                k.end_ns,
                k.device,
                k.stream_id,
                k.correlation_id,
                global_pid(k.pid),
                d,
                s,
                m,
                k.registers,
                k.grid_x,
                k.block_x,
                k.static_shared,
                k.dynamic_shared,
                grid_id as i64 + 1
            ])?;
            ins_r.execute(params![
                k.launch_ns,
                k.launch_ns + 3_000,
                global_tid(k.pid, k.tid),
                k.correlation_id,
                launch
            ])?;
        }
        let mut ins_n = tx.prepare(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, domainId) VALUES (?1, ?2, 59, ?3, ?4, ?4, 0)",
        )?;
        for n in &rep.nvtx {
            ins_n.execute(params![
                n.start_ns,
                n.end_ns,
                n.text,
                global_tid(n.pid, n.tid)
            ])?;
        }
    }
    for (id, name, label) in [
        (33, "NVTX_CATEGORY", "NVTX Category"),
        (34, "NVTX_MARK", "NVTX Mark"),
        (59, "NVTX_PUSHPOP_RANGE", "NVTX PushPop Range"),
        (60, "NVTX_STARTEND_RANGE", "NVTX StartEnd Range"),
        (79, "CUDA_RUNTIME", "CUDA Runtime API"),
    ] {
        tx.execute(
            "INSERT INTO ENUM_NSYS_EVENT_TYPE (id, name, label) VALUES (?1, ?2, ?3)",
            params![id, name, label],
        )?;
    }
    tx.execute(
        "INSERT INTO ENUM_NSYS_EVENT_CLASS (id, name, label) VALUES (1, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA Runtime API')",
        [],
    )?;
    tx.execute(
        "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, localTime) VALUES (?1, 'synthetic', 'synthetic')",
        params![rep.session_start_utc_ns],
    )?;
    for (name, value) in [
        (
            "EXPORT_SCHEMA_VERSION_MAJOR",
            rep.schema.label().split('.').next().unwrap_or("3"),
        ),
        (
            "EXPORT_SCHEMA_VERSION_MINOR",
            rep.schema.label().split('.').nth(1).unwrap_or("0"),
        ),
        (
            "EXPORT_SCHEMA_VERSION_MICRO",
            rep.schema.label().split('.').nth(2).unwrap_or("0"),
        ),
        ("EXPORT_PRODUCT", "ncclscope-synth"),
    ] {
        tx.execute(
            "INSERT INTO META_DATA_EXPORT (name, value) VALUES (?1, ?2)",
            params![name, value],
        )?;
    }
    tx.execute(
        "INSERT INTO ANALYSIS_DETAILS (globalVid, duration, startTime, stopTime) VALUES (0, ?1, 0, ?1)",
        params![rep.duration_ns],
    )?;
    tx.commit()
}

/// Generates preset `name` and writes it to `out_dir` (what `ncclscope synth --preset NAME --out DIR`
/// does). Errors with `InvalidInput` for an unknown name.
pub fn write_preset(name: &str, out_dir: &Path) -> io::Result<()> {
    let p = crate::preset(name).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("unknown synth preset `{name}`"),
        )
    })?;
    write_run(&crate::generate_named(&p.config, Some(p.name)), out_dir)
}
