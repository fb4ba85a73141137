//! `read_compute_kernels` on the real exports and a generated one, checked against SQL written
//! here (every compute kernel read back in start order and merged independently).

mod common;

use common::{all_fixtures, has_table, nsys_fixture_dir, raw};
use ingest_nsys::read_compute_kernels;
use sqlsource_native::NativeDb;
use std::collections::BTreeMap;
use std::path::Path;

/// Every non-NCCL kernel as (pid, device, name, start, end), in start order; the name is the
/// demangled one where the export has that column (the crate's documented choice).
fn compute_rows(conn: &rusqlite::Connection) -> Vec<(u32, u32, String, i64, i64)> {
    let demangled: i64 = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('CUPTI_ACTIVITY_KIND_KERNEL') \
             WHERE name = 'demangledName'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let col = if demangled > 0 {
        "demangledName"
    } else {
        "shortName"
    };
    let sql = format!(
        "SELECT (k.globalPid / 16777216) % 16777216, k.deviceId, \
         coalesce(s.value, ''), k.start, k.\"end\" \
         FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.{col} \
         WHERE s.value IS NULL OR instr(lower(s.value), 'nccl') = 0 ORDER BY k.start"
    );
    let mut st = conn.prepare(&sql).unwrap();
    st.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)? as u32,
            r.get::<_, Option<i64>>(1)?.unwrap_or(0) as u32,
            r.get::<_, String>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Checks one export: per GPU the count, the summed durations and the merged busy intervals;
/// per name the count, minimum and longest instances.
fn check(path: &Path) {
    let conn = raw(path);
    if !has_table(&conn, "CUPTI_ACTIVITY_KIND_KERNEL") {
        return;
    }
    let name = path.display();
    let got = read_compute_kernels(&NativeDb::open(path).unwrap()).expect("read");
    let rows = compute_rows(&conn);
    // Per (pid, device): count, Σ durations, busy intervals.
    type Gpu = (u64, i64, Vec<(i64, i64)>);
    let mut per_gpu: BTreeMap<(u32, u32), Gpu> = BTreeMap::new();
    let mut per_name: BTreeMap<String, (u64, i64, i64)> = BTreeMap::new();
    for (pid, dev, n, s, e) in &rows {
        let g = per_gpu.entry((*pid, *dev)).or_default();
        g.0 += 1;
        g.1 += e - s;
        // Merged in start order, the obvious way.
        match g.2.last_mut() {
            Some(last) if *s <= last.1 => last.1 = last.1.max(*e),
            _ => g.2.push((*s, *e)),
        }
        let m = per_name.entry(n.clone()).or_insert((0, i64::MAX, 0));
        m.0 += 1;
        m.1 = m.1.min(e - s);
        m.2 = m.2.max(e - s);
    }
    assert_eq!(got.tracks.len(), per_gpu.len(), "{name}");
    for t in &got.tracks {
        let (n, sum, busy) = &per_gpu[&(t.pid, t.device)];
        assert_eq!((t.kernels, t.kernel_ns), (*n, *sum), "{name} pid {}", t.pid);
        assert_eq!(&t.busy, busy, "{name} pid {}", t.pid);
    }
    let total: u64 = got.names.iter().map(|n| n.count).sum();
    assert_eq!(total as usize, rows.len(), "{name}");
    for n in &got.names {
        let (count, min, max) = per_name[n.name.as_ref()];
        assert_eq!((n.count, n.min_ns), (count, min), "{name}: {}", n.name);
        assert_eq!(n.worst.first().map(|w| w.duration_ns), Some(max));
        assert!(n
            .worst
            .windows(2)
            .all(|w| w[0].duration_ns >= w[1].duration_ns));
    }
}

#[test]
fn real_exports_compute_kernels_match_sql() {
    let Some(dir) = nsys_fixture_dir() else {
        return;
    };
    for path in all_fixtures(&dir) {
        check(&path);
    }
}

#[test]
fn a_generated_exports_compute_kernels_match_sql() {
    let dir = std::env::temp_dir().join(format!("ingest-nsys-compute-{}", std::process::id()));
    let run = synth::generate(&synth::preset("tp2pp2").unwrap().config);
    synth::write_run(&run, &dir).unwrap();
    let mut checked = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sqlite") {
            check(&p);
            checked += 1;
        }
    }
    assert!(checked > 0);
    let _ = std::fs::remove_dir_all(&dir);
}
