//! The exact kernel → NCCL call join on the real `mfu_2gpu` exports, which hold NCCL's own NVTX
//! ranges: the join over what the export reader returns must equal a plain SQL query over the
//! same file (runtime launch by correlation id and process → innermost NCCL range on that
//! thread containing the launch).
#![cfg(not(target_arch = "wasm32"))]

use align::nvtx_join::{join_nvtx, range_op};
use ingest_nsys::{read_export, ReadOptions};
use model::OpType;
use rusqlite::Connection;
use sqlsource_native::NativeDb;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn fixtures() -> Option<Vec<PathBuf>> {
    let dir = testkit::fixtures::dir("nsys")?;
    let files: Vec<PathBuf> = testkit::fixtures::files_in(&dir, "sqlite")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("mfu_2gpu"))
        .collect();
    if files.is_empty() {
        eprintln!(
            "notice: no mfu_2gpu fixtures in {}: test skipped",
            dir.display()
        );
        return None;
    }
    Some(files)
}

/// (pid, correlation id) → (thread id, range start, range text), by SQL alone. NCCL's domain is
/// the nonzero domain of the process whose ranges are named `nccl…` (these exports lost their
/// domain-creation rows).
fn expected(path: &PathBuf) -> BTreeMap<(u32, u32), (u32, i64, String)> {
    let c = Connection::open(path).expect("opens");
    let sql = "
        WITH ranges AS (
            SELECT e.globalTid AS tid, e.start, e.end, coalesce(e.text, s.value) AS name
            FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
            WHERE e.eventType IN (59, 60, 70, 71) AND e.end IS NOT NULL AND e.domainId IN (
                SELECT DISTINCT e2.domainId FROM NVTX_EVENTS e2 LEFT JOIN StringIds s2 ON s2.id = e2.textId
                WHERE e2.domainId != 0 AND coalesce(e2.text, s2.value) LIKE 'nccl%')),
        k AS (
            SELECT k.correlationId AS cid, k.globalPid AS gp
            FROM CUPTI_ACTIVITY_KIND_KERNEL k
            JOIN StringIds s ON s.id = coalesce(k.demangledName, k.shortName)
            WHERE s.value LIKE '%nccl%'),
        launch AS (
            SELECT k.cid, k.gp, min(r.start) AS t, min(r.globalTid) AS tid
            FROM k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
              ON r.correlationId = k.cid AND (r.globalTid >> 24) = (k.gp >> 24)
            GROUP BY k.cid, k.gp)
        SELECT launch.gp, launch.cid, launch.tid, x.start, x.name
        FROM launch JOIN ranges x ON x.tid = launch.tid AND x.start <= launch.t AND x.end >= launch.t
        WHERE x.start = (SELECT max(y.start) FROM ranges y
                         WHERE y.tid = launch.tid AND y.start <= launch.t AND y.end >= launch.t)";
    let mut stmt = c.prepare(sql).expect("the query compiles");
    let rows = stmt
        .query_map([], |r| {
            let gp: i64 = r.get(0)?;
            let cid: i64 = r.get(1)?;
            let tid: i64 = r.get(2)?;
            Ok((
                (((gp >> 24) & 0xFF_FFFF) as u32, cid as u32),
                (
                    (tid & 0xFF_FFFF) as u32,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                ),
            ))
        })
        .expect("runs");
    rows.map(|r| r.expect("row")).collect()
}

#[test]
fn kernels_join_their_nccl_calls_as_sql_says() {
    let Some(files) = fixtures() else { return };
    assert_eq!(files.len(), 2, "{files:?}");
    for path in files {
        let name = path.display().to_string();
        let db = NativeDb::open(&path).expect("opens");
        let export = read_export(&db, &name, &ReadOptions::default()).expect("reads");
        let mut got: BTreeMap<(u32, u32), (u32, i64, String)> = BTreeMap::new();
        let mut pids: Vec<u32> = export.kernels.iter().map(|k| k.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        assert_eq!(pids.len(), 2, "{name}: two GPUs, two processes");
        for pid in pids {
            let ks: Vec<_> = export.kernels.iter().filter(|k| k.pid == pid).collect();
            let join = join_nvtx(&ks, &export.nvtx);
            for (k, r) in ks.iter().zip(&join.launch_range) {
                if let Some(r) = r {
                    let range = &export.nvtx[*r];
                    got.insert(
                        (pid, k.correlation_id),
                        (range.tid, range.start_ns, range.text.clone()),
                    );
                }
            }
            // Every joined kernel launched at an ncclGroupEnd and runs its group's point-to-
            // point calls (the only operations these pipeline-parallel captures make).
            for (r, calls) in join.launch_range.iter().zip(&join.calls) {
                if let Some(r) = r {
                    assert_eq!(export.nvtx[*r].text, "ncclGroupEnd", "{name}");
                    let ops: Vec<OpType> = calls
                        .iter()
                        .filter_map(|&i| range_op(&export.nvtx[i]))
                        .collect();
                    assert!(!ops.is_empty() && ops.len() == calls.len(), "{name}");
                    assert!(
                        ops.iter().all(|o| matches!(o, OpType::Send | OpType::Recv)),
                        "{name}"
                    );
                }
            }
        }
        let want = expected(&path);
        assert!(
            want.len() >= 50,
            "{name}: {} joined kernels by SQL",
            want.len()
        );
        assert_eq!(got, want, "{name}");
        println!("{name}: {} kernels joined exactly", got.len());
    }
}
