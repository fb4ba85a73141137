//! The only module that touches the file system: writes a generated [`Run`] to a directory.

use crate::ncclnvtx::{self, NcclNvtxRow};
use crate::nsysdb::{global_pid, global_tid, KernelRow, NodeReport, NvtxRow, Schema};
use crate::realism::{self, ExportExtras};
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
        if run.config.report_per_rank {
            for &(pid, _, _) in &rep.processes {
                let path = out_dir.join(format!("report_{}_{pid}.sqlite", rep.host));
                write_report_file(&path, &rep.of_process(pid))?;
            }
        } else {
            let path = out_dir.join(format!("report_{}.sqlite", rep.host));
            write_report_file(&path, rep)?;
        }
    }
    std::fs::write(out_dir.join("truth.json"), run.truth_json())?;
    if run.config.stages.stage_file {
        std::fs::write(
            out_dir.join("stages.csv"),
            crate::step_stages::stage_file(run),
        )?;
    }
    Ok(())
}

/// Writes one report into a fresh database at `path`.
fn write_report_file(path: &Path, rep: &NodeReport) -> io::Result<()> {
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    let mut conn = Connection::open(path).map_err(sql_err)?;
    write_report(&mut conn, rep).map_err(sql_err)
}

/// Fills an open (empty) database with one node's report.
pub fn write_report(conn: &mut Connection, rep: &NodeReport) -> rusqlite::Result<()> {
    conn.execute_batch(rep.schema.ddl())?;
    let tx = conn.transaction()?;
    let nccl = !rep.nccl_nvtx.is_empty();
    let mut rw = ReportRows::begin_with(&tx, rep.schema, &rep.processes, nccl, &rep.extras)?;
    rw.insert(&tx, &rep.kernels, &rep.nvtx)?;
    rw.insert_nccl(&tx, &rep.nccl_nvtx)?;
    finish_report_with(
        &tx,
        &rep.host,
        rep.schema,
        rep.session_start_utc_ns,
        rep.duration_ns,
        nccl,
        &rep.extras,
    )?;
    tx.commit()
}

/// Incremental filling of one report: processes first, then kernels and NVTX ranges in as many
/// batches as the caller likes (the streaming writer sends one rank per transaction), then
/// [`finish_report`]. Why: `StringIds` and `gridId` must stay consistent across batches.
pub struct ReportRows {
    schema: Schema,
    strings: HashMap<String, i64>,
    launch: i64,
    grid_id: i64,
}

impl ReportRows {
    fn sid(&mut self, conn: &Connection, s: &str) -> rusqlite::Result<i64> {
        if let Some(id) = self.strings.get(s) {
            return Ok(*id);
        }
        let id = self.strings.len() as i64 + 1;
        conn.prepare_cached("INSERT INTO StringIds (id, value) VALUES (?1, ?2)")?
            .execute(params![id, s])?;
        self.strings.insert(s.to_string(), id);
        Ok(id)
    }

    /// Writes the process and device tables (the DDL must already be there), and with
    /// `nccl_nvtx` NCCL's NVTX domain and payload schemas for every process.
    pub fn begin(
        conn: &Connection,
        schema: Schema,
        processes: &[(u32, u32, String)],
        nccl_nvtx: bool,
    ) -> rusqlite::Result<ReportRows> {
        Self::begin_with(conn, schema, processes, nccl_nvtx, &ExportExtras::default())
    }

    /// [`ReportRows::begin`], with a realistic run's GPU table and CUDA device map (`extras`).
    pub fn begin_with(
        conn: &Connection,
        schema: Schema,
        processes: &[(u32, u32, String)],
        nccl_nvtx: bool,
        extras: &ExportExtras,
    ) -> rusqlite::Result<ReportRows> {
        let mut rw = ReportRows {
            schema,
            strings: HashMap::new(),
            launch: 0,
            grid_id: 0,
        };
        rw.launch = rw.sid(conn, "cudaLaunchKernel")?;
        for (pid, dev, name) in processes {
            conn.execute(
                "INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?1, ?2, ?3)",
                params![global_pid(*pid), pid, name],
            )?;
            let tn = rw.sid(conn, "python3")?;
            conn.execute(
                "INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?1, 0, ?2)",
                params![tn, global_tid(*pid, *pid)],
            )?;
            if schema == Schema::V3_17 && extras.cuda_devices.is_empty() {
                conn.execute(
                    "INSERT INTO TARGET_INFO_CUDA_DEVICE (gpuId, cudaId, pid) VALUES (?1, ?2, ?3)",
                    params![dev, dev, pid],
                )?;
            }
        }
        if schema == Schema::V3_17 {
            for (pid, gpu, cuda) in &extras.cuda_devices {
                conn.execute(
                    "INSERT INTO TARGET_INFO_CUDA_DEVICE (gpuId, cudaId, pid) VALUES (?1, ?2, ?3)",
                    params![gpu, cuda, pid],
                )?;
            }
        }
        if schema != Schema::V3_25 && !extras.gpus.is_empty() {
            for (id, bus) in &extras.gpus {
                conn.execute(
                    "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, smCount, cuDevice, computeMajor, computeMinor) VALUES (0, ?1, 'NVIDIA A100-SXM4-80GB', ?2, 1, 108, ?1, 8, 0)",
                    params![id, bus],
                )?;
            }
        } else if schema != Schema::V3_25 {
            let mut devs: Vec<u32> = processes.iter().map(|p| p.1).collect();
            devs.sort_unstable();
            devs.dedup();
            for d in devs {
                conn.execute(
                    "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, smCount, cuDevice, computeMajor, computeMinor) VALUES (0, ?1, 'NVIDIA A100-SXM4-80GB', ?2, 1, 108, ?1, 8, 0)",
                    params![d, format!("0000:{:02x}:00.0", 0x18 + d * 0x10)],
                )?;
            }
        }
        if nccl_nvtx {
            // One registration per process, as the real export lists them.
            for (pid, _, _) in processes {
                conn.execute(
                    "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (0, NULL, 75, 'NCCL', ?1, ?2)",
                    params![global_tid(*pid, *pid), ncclnvtx::DOMAIN_ID],
                )?;
                for sc in &ncclnvtx::SCHEMAS {
                    conn.execute(
                        "INSERT INTO NVTX_PAYLOAD_SCHEMAS (domainId, schemaId, name, type, flags, numEntries, payloadSize, alignTo) VALUES (?1, ?2, NULL, 1, NULL, ?3, ?4, NULL)",
                        params![ncclnvtx::DOMAIN_ID, sc.id as i64, sc.entries.len() as i64, sc.size as i64],
                    )?;
                    for (idx, (ty, name, off)) in sc.entries.iter().enumerate() {
                        // The real export leaves offset 0 NULL.
                        let off = (*off > 0).then_some(*off as i64);
                        conn.execute(
                            "INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId, schemaId, idx, flags, type, name, description, arrayOrUnionDetail, offset) VALUES (?1, ?2, ?3, NULL, ?4, ?5, NULL, NULL, ?6)",
                            params![ncclnvtx::DOMAIN_ID, sc.id as i64, idx as i64, *ty as i64, name, off],
                        )?;
                    }
                }
            }
        }
        Ok(rw)
    }

    /// Inserts kernels (with their launch calls) and NVTX ranges.
    pub fn insert(
        &mut self,
        conn: &Connection,
        kernels: &[KernelRow],
        nvtx: &[NvtxRow],
    ) -> rusqlite::Result<()> {
        let ins_k_sql = match self.schema {
            Schema::V3_16 | Schema::V3_17 => "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig) VALUES (?1, ?2, ?3, 1, NULL, ?4, ?5, ?6, ?7, ?8, ?9, 0, 0, ?10, ?11, 1, 1, ?12, 1, 1, ?13, ?14, 0, 0, ?15, 0, NULL, 1)",
            Schema::V3_25 => "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig, tensorSizeMinusOneElements) VALUES (?1, ?2, ?3, 1, NULL, ?4, ?5, ?6, ?7, ?8, ?9, 0, 0, ?10, ?11, 1, 1, ?12, 1, 1, ?13, ?14, 0, 0, ?15, 0, NULL, 1, '')",
        };
        for k in kernels {
            let d = self.sid(conn, &k.demangled)?;
            let s = self.sid(conn, &k.short)?;
            let m = self.sid(conn, &k.mangled)?;
            self.grid_id += 1;
            conn.prepare_cached(ins_k_sql)?.execute(params![
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
                self.grid_id
            ])?;
            conn.prepare_cached(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue, callchainId) VALUES (?1, ?2, 1, ?3, ?4, ?5, 0, NULL)",
            )?
            .execute(params![
                k.launch_ns,
                k.launch_ns + 3_000,
                global_tid(k.pid, k.tid),
                k.correlation_id,
                self.launch
            ])?;
        }
        let mut ins_n = conn.prepare_cached(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, domainId) VALUES (?1, ?2, 59, ?3, ?4, ?4, 0)",
        )?;
        for n in nvtx {
            ins_n.execute(params![
                n.start_ns,
                n.end_ns,
                n.text,
                global_tid(n.pid, n.tid)
            ])?;
        }
        Ok(())
    }

    /// Inserts ranges of NCCL's NVTX domain: name as a registered string (`textId`), payload
    /// bytes in `binaryData`.
    pub fn insert_nccl(&mut self, conn: &Connection, rows: &[NcclNvtxRow]) -> rusqlite::Result<()> {
        for n in rows {
            let text_id = self.sid(conn, n.function)?;
            conn.prepare_cached(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId, domainId, binaryData) VALUES (?1, ?2, 59, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                n.start_ns,
                n.end_ns,
                global_tid(n.pid, n.tid),
                text_id,
                ncclnvtx::DOMAIN_ID,
                n.payload
            ])?;
        }
        Ok(())
    }
}

/// Enumerations, session start, the node's hostname, export metadata and capture duration:
/// the rows written last.
pub fn finish_report(
    tx: &Connection,
    host: &str,
    schema: Schema,
    session_start_utc_ns: i64,
    duration_ns: i64,
    nccl_nvtx: bool,
) -> rusqlite::Result<()> {
    finish_report_with(
        tx,
        host,
        schema,
        session_start_utc_ns,
        duration_ns,
        nccl_nvtx,
        &ExportExtras::default(),
    )
}

/// [`finish_report`], with a realistic run's clock base and zone (`extras`).
pub fn finish_report_with(
    tx: &Connection,
    host: &str,
    schema: Schema,
    session_start_utc_ns: i64,
    duration_ns: i64,
    nccl_nvtx: bool,
    extras: &ExportExtras,
) -> rusqlite::Result<()> {
    if nccl_nvtx {
        tx.execute(
            "INSERT INTO ENUM_NSYS_EVENT_TYPE (id, name, label) VALUES (75, 'NVTX_DOMAIN_CREATE', 'NVTX Domain Create')",
            [],
        )?;
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
    // As nsys writes it (nameEnum 619 in the real exports): how an export names its node.
    tx.execute(
        "INSERT INTO TARGET_INFO_SYSTEM_ENV (globalVid, devStateName, name, nameEnum, value) VALUES (281474976710656, 'Local (CLI)', 'Hostname', 619, ?1)",
        params![host],
    )?;
    match extras.zone_offset_min {
        None => {
            tx.execute(
                "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, localTime) VALUES (?1, 'synthetic', 'synthetic')",
                params![session_start_utc_ns],
            )?;
        }
        Some(zone) => {
            let local = session_start_utc_ns + i64::from(zone) * 60_000_000_000;
            tx.execute(
                "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, localTime) VALUES (?1, ?2, ?3)",
                params![session_start_utc_ns, realism::iso(session_start_utc_ns), realism::iso(local)],
            )?;
        }
    }
    if let (Schema::V3_25, Some(base)) = (schema, extras.system_clock_ns) {
        tx.execute(
            "UPDATE TARGET_INFO_SESSION_START_TIME SET systemClockNs = ?1",
            params![base],
        )?;
    }
    // The keys and values the real exports of this schema carry (the `GindaChen-nsys-ai` 3.25.0
    // and `NVIDIA-Fuser` 3.17.1 fixtures), plus one saying who really wrote the file.
    let version = schema.label();
    let mut parts = version.split('.');
    let (major, minor) = (parts.next().unwrap_or("3"), parts.next().unwrap_or("0"));
    let (product_version, product_date) = match schema {
        Schema::V3_16 => ("2024.6.2.25", "2024.6"),
        Schema::V3_17 => ("2025.1.1.110", "2025.1"),
        Schema::V3_25 => ("2026.2.1.210", "2026.2"),
    };
    for (name, value) in [
        ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
        ("EXPORT_PRODUCT_VERSION", product_version),
        ("EXPORT_PRODUCT_DATE", product_date),
        ("EXPORT_SCHEMA_VERSION", version),
        ("EXPORT_SCHEMA_VERSION_MAJOR", major),
        ("EXPORT_SCHEMA_VERSION_MINOR", minor),
        ("EXPORT_GENERATED_BY", "ncclscope-synth"),
    ] {
        tx.execute(
            "INSERT INTO META_DATA_EXPORT (name, value) VALUES (?1, ?2)",
            params![name, value],
        )?;
    }
    // In the system clock the capture starts at its base (as in the real 3.25 exports).
    let start = extras
        .system_clock_ns
        .filter(|_| schema == Schema::V3_25)
        .unwrap_or(0);
    tx.execute(
        "INSERT INTO ANALYSIS_DETAILS (globalVid, duration, startTime, stopTime) VALUES (0, ?1, ?2, ?3)",
        params![duration_ns, start, start + duration_ns],
    )?;
    Ok(())
}

/// Generates preset `name` and writes it to `out_dir` (what `ncclscope synth --preset NAME --out DIR`
/// does). Errors with `InvalidInput` for an unknown name. Large presets are streamed
/// ([`crate::write_preset_streaming`]).
pub fn write_preset(name: &str, out_dir: &Path) -> io::Result<()> {
    let p = crate::preset(name).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("unknown synth preset `{name}`"),
        )
    })?;
    if p.config.layout.world() >= STREAMING_MIN_RANKS {
        return crate::stream::write_streaming(&p.config, Some(p.name), out_dir).map(|_| ());
    }
    write_run(&crate::generate_named(&p.config, Some(p.name)), out_dir)
}

/// From this many ranks on, [`write_preset`] streams (`large-64`, `huge-1024`): building those runs
/// in memory takes gigabytes.
pub const STREAMING_MIN_RANKS: u32 = 64;
