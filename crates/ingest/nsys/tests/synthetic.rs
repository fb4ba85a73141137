//! Schema variants and payload decoding on databases built here: an old-style kernel table with
//! optional columns missing, NVTX domains from DomainCreate rows, and NCCL payloads encoded by
//! hand along the *real* payload schemas copied from `mfu_2gpu_before.sqlite` (whose own
//! `binaryData` is empty: it was exported without `--include-blobs`).

mod common;

use common::nsys_fixture_dir;
use ingest_nsys::{count_nccl_kernels, read_export, ReadOptions};
use model::nsys::PayloadValue;
use model::{RedOp, Severity};
use rusqlite::Connection;
use sqlsource_native::NativeDb;

const GPID: i64 = (1 << 48) | (4242 << 24);

fn minimal_kernel_db() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    // shortName only (no demangledName), no grid/block/shared-memory columns, no runtime table.
    conn.execute_batch(&format!(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'ncclKernel_AllReduce_RING_LL_Sum_float'), (2, 'sgemm'),
                                      (3, 'NCCLDEVKERNEL_SENDRECV');
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
             deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
             shortName INTEGER NOT NULL);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
             (100, 150, 1, 7, 11, {GPID}, 1), (200, 260, 1, 7, 12, {GPID}, 2),
             (300, 330, 1, 7, 13, {GPID}, 2), (400, 410, 1, 7, 14, {GPID}, 3),
             (500, 510, 1, 7, 15, {GPID}, 99);"
    ))
    .unwrap();
    conn
}

#[test]
fn old_schema_with_missing_columns() {
    let db = NativeDb::from_connection(minimal_kernel_db());
    assert_eq!(
        count_nccl_kernels(&db).unwrap(),
        2,
        "LIKE over the name is case-insensitive"
    );
    let x = read_export(&db, "mem.sqlite", &ReadOptions::default()).unwrap();
    assert_eq!(x.kernels.len(), 2);
    assert_eq!(x.kernels.get(0).unwrap().pid, 4242);
    assert_eq!(x.kernels.get(0).unwrap().grid, [0, 0, 0]);
    assert_eq!(x.kernels.get(0).unwrap().launch_ns, None);
    // Two sgemm plus one kernel whose name id is missing from StringIds.
    assert_eq!(x.other_kernels.len(), 1);
    assert_eq!(
        (x.other_kernels[0].count, x.other_kernels[0].total_ns),
        (3, 60 + 30 + 10)
    );
    let missing = x
        .diagnostics
        .iter()
        .find(|d| d.message.contains("lacks columns"))
        .unwrap();
    assert_eq!(missing.severity, Severity::Warning);
    assert!(missing.message.contains("gridX"));
    assert!(x
        .diagnostics
        .iter()
        .any(|d| d.message.contains("CUPTI_ACTIVITY_KIND_RUNTIME")));
}

#[test]
fn nvtx_domains_and_iterations() {
    let conn = minimal_kernel_db();
    let tid = GPID | 17;
    conn.execute_batch(&format!(
        "INSERT INTO StringIds VALUES (10, 'ncclAllReduce'), (11, 'iteration 1');
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
             text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER);
         INSERT INTO NVTX_EVENTS VALUES
             (1, NULL, 75, 'NCCL', {tid}, NULL, 3),
             (5, 95, 59, NULL, {tid}, 11, 0),
             (10, 20, 59, NULL, {tid}, 10, 3),
             (30, 40, 60, 'my step 2', {tid}, NULL, 0),
             (50, NULL, 34, 'a mark', {tid}, NULL, 0);"
    ))
    .unwrap();
    let db = NativeDb::from_connection(conn);
    let x = read_export(&db, "mem.sqlite", &ReadOptions::default()).unwrap();
    let texts: Vec<&str> = x.nvtx.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts, vec!["iteration 1", "ncclAllReduce", "my step 2"]);
    assert_eq!(x.nvtx[1].domain.as_deref(), Some("NCCL"));
    assert_eq!(x.nvtx[0].domain, None);
    assert_eq!(x.iterations, vec![0, 2]);
    assert_eq!(x.nccl_calls.len(), 1);
    assert_eq!((x.nvtx[0].pid, x.nvtx[0].tid), (4242, 17));
    let custom = ReadOptions {
        iteration_patterns: vec!["my step *".into()],
    };
    let y = read_export(&db, "mem.sqlite", &custom).unwrap();
    assert_eq!(y.iterations, vec![2]);
}

/// NCCL payloads laid out as NCCL's structs (little-endian, natural alignment).
fn payload(parts: &[&[u8]], size: usize) -> Vec<u8> {
    let mut v: Vec<u8> = parts.concat();
    v.resize(size, 0);
    v
}

#[test]
fn nccl_payloads_decode_along_real_schemas() {
    let Some(dir) = nsys_fixture_dir() else {
        return;
    };
    let fixture = dir.join("GindaChen-nsys-ai_mfu_2gpu_before.sqlite");
    let conn = Connection::open_in_memory().unwrap();
    conn.execute(
        "ATTACH DATABASE ?1 AS src",
        [format!("file:{}?mode=ro", fixture.display())],
    )
    .unwrap();
    let tid = GPID | 17;
    conn.execute_batch(
        "CREATE TABLE StringIds AS SELECT * FROM src.StringIds;
         CREATE TABLE NVTX_PAYLOAD_SCHEMAS AS SELECT * FROM src.NVTX_PAYLOAD_SCHEMAS;
         CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES AS SELECT * FROM src.NVTX_PAYLOAD_SCHEMA_ENTRIES;
         CREATE TABLE NVTX_EVENTS AS SELECT * FROM src.NVTX_EVENTS WHERE 0;
         DETACH DATABASE src;
         INSERT INTO StringIds VALUES (900001, 'ncclAllReduce'), (900002, 'ncclCommInitRank');",
    )
    .unwrap();
    let comm: u64 = 0x1c5f_00d2_9a41_7e03;
    let send = payload(
        &[
            &comm.to_le_bytes(),
            &1_048_576u64.to_le_bytes(),
            &1i32.to_le_bytes(),
        ],
        24,
    );
    let recv = payload(
        &[
            &comm.to_le_bytes(),
            &4096u64.to_le_bytes(),
            &0i32.to_le_bytes(),
        ],
        24,
    );
    let allreduce = payload(
        &[
            &comm.to_le_bytes(),
            &33_554_432u64.to_le_bytes(),
            &4i32.to_le_bytes(),
        ],
        24,
    );
    let init = payload(
        &[
            &comm.to_le_bytes(),
            &2i32.to_le_bytes(),
            &1i32.to_le_bytes(),
            &1i32.to_le_bytes(),
        ],
        24,
    );
    let hex: String = send.iter().map(|b| format!("{b:02x}")).collect();
    let mut ins = conn
        .prepare("INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId, domainId, binaryData) VALUES (?1, ?2, 59, ?3, ?4, 1, ?5)")
        .unwrap();
    // ncclSend / ncclRecv are the real registered strings 129627 / 129628.
    ins.execute(rusqlite::params![10, 20, tid, 129627, send])
        .unwrap();
    ins.execute(rusqlite::params![30, 40, tid, 129628, recv])
        .unwrap();
    ins.execute(rusqlite::params![50, 60, tid, 900001, allreduce])
        .unwrap();
    ins.execute(rusqlite::params![70, 80, tid, 900002, init])
        .unwrap();
    ins.execute(rusqlite::params![90, 95, tid, 129627, hex])
        .unwrap(); // the blob as hex TEXT
    ins.execute(rusqlite::params![96, 97, tid, 71490, rusqlite::types::Null])
        .unwrap(); // ncclGroupStart
    drop(ins);

    let db = NativeDb::from_connection(conn);
    let x = read_export(&db, "mem.sqlite", &ReadOptions::default()).unwrap();
    let calls = &x.nccl_calls;
    assert_eq!(calls.len(), 6);
    let c = &calls[0];
    assert_eq!(c.api, "ncclSend");
    assert_eq!(
        (c.comm_id, c.msg_bytes, c.peer),
        (Some(comm), Some(1_048_576), Some(1))
    );
    // Send and Recv share one layout under two ids: decoded, but the id is not guessed.
    assert_eq!(c.schema_id, None);
    assert_eq!(c.fields[1].value, PayloadValue::Uint(1_048_576));
    assert_eq!((calls[1].msg_bytes, calls[1].peer), (Some(4096), Some(0)));
    let ar = &calls[2];
    assert_eq!(ar.schema_id, Some(16777223));
    assert_eq!(
        (ar.msg_bytes, ar.red_op),
        (Some(33_554_432), Some(RedOp::Avg))
    );
    let init = &calls[3];
    assert_eq!(
        (init.nranks, init.rank, init.cuda_device, init.comm_id),
        (Some(2), Some(1), Some(1), Some(comm))
    );
    assert_eq!(calls[4].msg_bytes, Some(1_048_576), "hex TEXT payload");
    assert!(
        calls[5].fields.is_empty() && calls[5].schema_id.is_none(),
        "ncclGroupStart has no payload"
    );
}

/// Ordering, duplicates and launches on a hand-made table: rows out of order, an exact duplicate,
/// a duplicate under another `globalPid` carrying the same pid (two hosts' pid 7), a correlation
/// id far from the others, and two runtime rows for one kernel (earliest start, lowest thread).
#[test]
fn order_duplicates_and_launches() {
    let a: i64 = (1 << 48) | (7 << 24);
    let b: i64 = (2 << 48) | (7 << 24);
    let c: i64 = (1 << 48) | (9 << 24);
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'ncclDevKernel_AllGather_RING_LL'), (2, 'sgemm');
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
             deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
             demangledName INTEGER NOT NULL);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
             (500, 510, 0, 1, 10, {a}, 1), (100, 150, 0, 1, 5000000, {a}, 1),
             (100, 150, 0, 1, 5000000, {a}, 1), (100, 150, 0, 1, 5000000, {b}, 1),
             (300, 320, 0, 1, 11, {c}, 1), (200, 220, 0, 1, 12, {c}, 2);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
             correlationId INTEGER, globalTid INTEGER);
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
             (50, 51, 10, {a} + 3), (40, 41, 10, {a} + 4), (90, 91, 5000000, {a} + 5),
             (70, 71, 11, {c} + 6), (10, 11, 11, {a} + 1);"
    ))
    .unwrap();
    let db = NativeDb::from_connection(conn);
    let x = read_export(&db, "mem.sqlite", &ReadOptions::default()).unwrap();
    let got: Vec<_> = x
        .kernels
        .iter()
        .map(|k| {
            (
                k.pid,
                k.start_ns,
                k.correlation_id,
                k.launch_ns,
                k.launch_tid,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (7, 100, 5_000_000, Some(90), Some(5)),
            (7, 500, 10, Some(40), Some(3)),
            (9, 300, 11, Some(70), Some(6)),
        ]
    );
    assert!(x
        .kernels
        .iter()
        .all(|k| &*k.name == "ncclDevKernel_AllGather_RING_LL"));
    assert_eq!(x.other_kernels.len(), 1);
    assert_eq!(
        (
            x.other_kernels[0].pid,
            x.other_kernels[0].count,
            x.other_kernels[0].total_ns
        ),
        (9, 1, 20)
    );
}
