//! `read_export` on all six real exports, each number checked against SQL written here
//! independently of the crate (rusqlite directly, different formulations: `instr` instead of
//! `LIKE`, division instead of shifts).

mod common;

use common::{all_fixtures, has_table, nsys_fixture_dir, raw, scalar_i64};
use ingest_nsys::{count_nccl_kernels, read_export, ReadOptions};
use model::nsys::NsysExport;
use model::Severity;
use sqlsource_native::NativeDb;
use std::collections::BTreeMap;
use std::path::Path;

fn read(path: &Path) -> NsysExport {
    let db = NativeDb::open(path).expect("open");
    read_export(&db, &path.display().to_string(), &ReadOptions::default()).expect("read_export")
}

const NCCL_NAME: &str = "instr(lower(s.value), 'nccl') > 0";

#[test]
fn every_fixture_matches_independent_sql() {
    let Some(dir) = nsys_fixture_dir() else {
        return;
    };
    let files = all_fixtures(&dir);
    assert_eq!(
        files.len(),
        6,
        "expected the six real exports in {}",
        dir.display()
    );
    for path in files {
        let conn = raw(&path);
        let x = read(&path);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let nccl = check_kernels(&conn, &path, &x, &name);
        check_nvtx_and_processes(&conn, &x, &name);
        let version = check_target(&conn, &x, &name);

        // "No NCCL kernels" is a warning, never an error.
        let warned = x
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Warning && d.message.contains("no NCCL kernels"));
        assert_eq!(warned, nccl == 0, "{name}: no-NCCL warning");
        assert!(x
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error && d.path.ends_with(&name)));

        println!(
            "{name}: schema {} | NCCL kernels {} | other kernels {} | NVTX {} (NCCL {}, iterations {}) | \
             processes {} | GPUs {} | hosts {:?} | payload schemas {}",
            version,
            x.kernels.len(),
            x.other_kernels.iter().map(|o| o.count).sum::<u64>(),
            x.nvtx.len(),
            x.nccl_calls.len(),
            x.iterations.len(),
            x.processes.len(),
            x.gpus.len(),
            x.hosts,
            x.payload_schemas.len()
        );
    }
}

/// The NCCL kernels (read and counted) and the non-NCCL kernels per (pid, device) against the
/// SQL; returns the NCCL kernel count.
fn check_kernels(conn: &rusqlite::Connection, path: &Path, x: &NsysExport, name: &str) -> i64 {
    let nccl = scalar_i64(
        conn,
        &format!(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k, StringIds s \
             WHERE s.id = k.demangledName AND {NCCL_NAME}"
        ),
    );
    assert_eq!(x.kernels.len() as i64, nccl, "{name}: NCCL kernels");
    let db = NativeDb::open(path).unwrap();
    assert_eq!(
        count_nccl_kernels(&db).unwrap() as i64,
        nccl,
        "{name}: count helper"
    );

    // Non-NCCL kernels per (pid, device) with their summed durations.
    let mut want: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    let mut st = conn
        .prepare(&format!(
            "SELECT k.globalPid / 16777216 % 16777216, k.deviceId, count(*), total(k.\"end\" - k.start) \
             FROM CUPTI_ACTIVITY_KIND_KERNEL k, StringIds s \
             WHERE s.id = k.demangledName AND NOT {NCCL_NAME} GROUP BY 1, 2"
        ))
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((
                (r.get(0)?, r.get(1)?),
                (r.get(2)?, r.get::<_, f64>(3)? as i64),
            ))
        })
        .unwrap();
    for row in rows {
        let (k, v) = row.unwrap();
        want.insert(k, v);
    }
    let got: BTreeMap<(i64, i64), (i64, i64)> = x
        .other_kernels
        .iter()
        .map(|o| {
            (
                (o.pid as i64, o.device as i64),
                (o.count as i64, o.total_ns),
            )
        })
        .collect();
    assert_eq!(got, want, "{name}: non-NCCL kernels");
    nccl
}

/// NVTX ranges (all, and NCCL's own) and the processes with kernels or NVTX against the SQL.
fn check_nvtx_and_processes(conn: &rusqlite::Connection, x: &NsysExport, name: &str) {
    // NVTX ranges (push/pop and start/end types).
    let nvtx = scalar_i64(
        conn,
        "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71)",
    );
    assert_eq!(x.nvtx.len() as i64, nvtx, "{name}: NVTX ranges");
    // NCCL's own ranges: registered strings named nccl* in a nonzero domain.
    let nccl_nvtx = scalar_i64(
        conn,
        "SELECT count(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId \
         WHERE e.domainId <> 0 AND substr(s.value, 1, 4) = 'nccl'",
    );
    assert_eq!(
        x.nccl_calls.len() as i64,
        nccl_nvtx,
        "{name}: NCCL NVTX ranges"
    );

    // Processes with kernels or NVTX.
    let procs = scalar_i64(
        conn,
        "SELECT count(DISTINCT pid) FROM PROCESSES WHERE pid IN \
         (SELECT globalPid / 16777216 % 16777216 FROM CUPTI_ACTIVITY_KIND_KERNEL \
          UNION SELECT globalTid / 16777216 % 16777216 FROM NVTX_EVENTS)",
    );
    assert_eq!(x.processes.len() as i64, procs, "{name}: processes");
}

/// GPUs, hosts, session start and schema version against the SQL; returns the version.
fn check_target(conn: &rusqlite::Connection, x: &NsysExport, name: &str) -> String {
    let gpus = if has_table(conn, "TARGET_INFO_GPU") {
        scalar_i64(conn, "SELECT count(DISTINCT id) FROM TARGET_INFO_GPU")
    } else {
        0
    };
    assert_eq!(x.gpus.len() as i64, gpus, "{name}: GPUs");
    assert!(
        x.gpus
            .iter()
            .all(|g| g.bus_id.as_deref().is_some_and(|b| b.len() == 12)),
        "{name}: bus ids"
    );
    let host: String = conn
        .query_row(
            "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(x.hosts, vec![host], "{name}: host");
    let utc = scalar_i64(
        conn,
        "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME",
    );
    assert_eq!(
        x.session_start.map(|s| s.utc_epoch_ns),
        Some(utc),
        "{name}: session start"
    );
    let version: String = conn
        .query_row(
            "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        x.schema_version.as_deref(),
        Some(version.as_str()),
        "{name}: schema version"
    );
    version
}

#[test]
fn mfu_before_kernels_and_launches() {
    let Some(dir) = nsys_fixture_dir() else {
        return;
    };
    let path = dir.join("GindaChen-nsys-ai_mfu_2gpu_before.sqlite");
    let conn = raw(&path);
    let x = read(&path);
    assert_eq!(x.kernels.len(), 66);
    assert!(x.kernels.iter().all(
        |k| &*k.name == "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)"
    ));
    let pids: std::collections::BTreeSet<u32> = x.kernels.iter().map(|k| k.pid).collect();
    assert_eq!(pids.into_iter().collect::<Vec<_>>(), vec![144, 145]);
    // Launch found for 64 of 66 (two launches fell outside the sliced window).
    let launched = scalar_i64(
        &conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName \
         WHERE s.value = 'ncclDevKernel_SendRecv' AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r \
         WHERE r.correlationId = k.correlationId AND r.globalTid / 16777216 = k.globalPid / 16777216)",
    );
    assert_eq!(launched, 64);
    assert_eq!(
        x.kernels.iter().filter(|k| k.launch_ns.is_some()).count() as i64,
        launched
    );
    // One kernel checked field by field against its row.
    let k = x
        .kernels
        .iter()
        .find(|k| k.correlation_id == 2612712)
        .expect("kernel 2612712");
    let (start, end, dev, stream, gx, bx, regs, dsm): (i64, i64, i64, i64, i64, i64, i64, i64) = conn
        .query_row(
            "SELECT start, \"end\", deviceId, streamId, gridX, blockX, registersPerThread, dynamicSharedMemory \
             FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = 2612712 AND globalPid = 281477392629760",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)),
        )
        .unwrap();
    assert_eq!(
        (k.start_ns, k.end_ns, k.device as i64, k.stream as i64),
        (start, end, dev, stream)
    );
    assert_eq!(
        (
            k.grid[0] as i64,
            k.block[0] as i64,
            k.registers_per_thread as i64
        ),
        (gx, bx, regs)
    );
    assert_eq!(k.dynamic_shared_bytes as i64, dsm);
    assert_eq!(k.pid, 144);
    assert_eq!(k.launch_ns, Some(60126367707));
    assert_eq!(k.launch_tid, Some((281477392629904i64 % 16777216) as u32));
    // Every NCCL kernel name decodes as SendRecv.
    for k in &x.kernels {
        assert_eq!(
            ingest_nsys::decode_kernel_name(&k.name).and_then(|n| n.op),
            Some(model::OpType::SendRecv)
        );
    }
}

#[test]
fn mfu_nccl_nvtx_ranges_and_schemas() {
    let Some(dir) = nsys_fixture_dir() else {
        return;
    };
    for (file, sends) in [
        ("GindaChen-nsys-ai_mfu_2gpu_before.sqlite", 132),
        ("GindaChen-nsys-ai_mfu_2gpu_after.sqlite", 120),
    ] {
        let path = dir.join(file);
        let conn = raw(&path);
        let x = read(&path);
        let count = |api: &str| x.nccl_calls.iter().filter(|c| c.api == api).count();
        assert_eq!(count("ncclSend"), sends, "{file}");
        assert_eq!(count("ncclRecv"), sends, "{file}");
        assert_eq!(count("ncclGroupStart"), sends / 2, "{file}");
        for c in &x.nccl_calls {
            assert_eq!(x.nvtx[c.nvtx_index].domain.as_deref(), Some("NCCL"));
            assert_eq!(x.nvtx[c.nvtx_index].text, c.api);
        }
        // Schemas: 8 distinct (each of the 2 processes registered the same 8).
        let distinct = scalar_i64(
            &conn,
            "SELECT count(*) FROM (SELECT DISTINCT domainId, schemaId FROM NVTX_PAYLOAD_SCHEMAS)",
        );
        assert_eq!(distinct, 8);
        assert_eq!(x.payload_schemas.len() as i64, distinct);
        let entries = scalar_i64(
            &conn,
            "SELECT count(*) FROM (SELECT DISTINCT domainId, schemaId, idx FROM NVTX_PAYLOAD_SCHEMA_ENTRIES)",
        );
        assert_eq!(
            x.payload_schemas
                .iter()
                .map(|s| s.entries.len())
                .sum::<usize>() as i64,
            entries
        );
        // The AllReduce/ReduceScatter schema, as in NCCL's nvtx_payload_schemas.h.
        let ar = x
            .payload_schemas
            .iter()
            .find(|s| s.schema_id == 16777223)
            .expect("schema 16777223");
        let layout: Vec<(Option<&str>, u64, Option<u64>)> = ar
            .entries
            .iter()
            .map(|e| (e.name.as_deref(), e.type_id, e.offset))
            .collect();
        assert_eq!(
            layout,
            vec![
                (Some("NCCL communicator ID"), 18, None),
                (Some("Message size [bytes]"), 22, Some(8)),
                (Some("Reduction operation"), 16777232, Some(16)),
            ]
        );
        assert_eq!(ar.payload_size, Some(24));
        // The export kept no payload bytes (EXPORT_PARAM_INCLUDE_BLOBS false), so nothing decodes,
        // and the reader says why.
        assert_eq!(
            scalar_i64(&conn, "SELECT count(binaryData) FROM NVTX_EVENTS"),
            0
        );
        assert!(x
            .nccl_calls
            .iter()
            .all(|c| c.fields.is_empty() && c.msg_bytes.is_none()));
        assert!(
            x.diagnostics
                .iter()
                .any(|d| d.message.contains("--include-blobs")),
            "{file}"
        );
    }
}

#[test]
fn multi_gpu_fuser_export() {
    let Some(dir) = nsys_fixture_dir() else {
        return;
    };
    let x = read(&dir.join("NVIDIA-Fuser_report1_8fa9ec29.sqlite"));
    assert_eq!(x.gpus.len(), 8);
    let g0 = x.gpus.iter().find(|g| g.id == 0).unwrap();
    assert_eq!(g0.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(g0.bus_id.as_deref(), Some("0000:1b:00.0"));
    assert_eq!(x.schema_version.as_deref(), Some("3.16.1"));
    // Before schema 3.25 the host clock at session start comes from ANALYSIS_DETAILS.
    assert!(x.session_start.unwrap().host_clock_ns.is_some());
    let y = read(&dir.join("NVIDIA-Fuser_report1_ee4fcf30.sqlite"));
    assert_eq!(y.cuda_devices.len(), 2);
    assert!(y
        .cuda_devices
        .iter()
        .all(|d| d.gpu_id == Some(0) && d.cuda_device == 0));
}
