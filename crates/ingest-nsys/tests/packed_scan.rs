//! The export reader gives the same records when its table scans are fetched in packed batches
//! (`sqlsource::packed`, what the page's sql.js back end does) as when they are read row by
//! row: every real fixture and generator exports of both schemas, with batches of every size
//! from one row up (so that batch edges fall everywhere).

mod common;

use common::{all_fixtures, nsys_fixture_dir};
use ingest_nsys::{read_export, ReadOptions};
use sqlsource::{packed, Row, SqlError, SqlSource, TableScan};
use sqlsource_native::NativeDb;

/// rusqlite with its scans fetched the packed way, `batch` rows at a time.
struct Packed<'a> {
    db: &'a NativeDb,
    batch: usize,
}

impl SqlSource for Packed<'_> {
    fn for_each(
        &self,
        sql: &str,
        row: &mut dyn FnMut(&dyn Row) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        self.db.for_each(sql, row)
    }

    fn scan(
        &self,
        scan: &TableScan<'_>,
        row: &mut dyn FnMut(&dyn Row) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        packed::scan_packed(self.db, scan, self.batch, row)
    }
}

fn same_both_ways(name: &str, db: &NativeDb, batches: &[usize]) -> usize {
    let plain = read_export(db, name, &ReadOptions::default()).expect("reads");
    for &batch in batches {
        let packed = read_export(&Packed { db, batch }, name, &ReadOptions::default())
            .expect("reads packed");
        assert_eq!(
            format!("{packed:?}"),
            format!("{plain:?}"),
            "{name}, {batch} rows a batch"
        );
    }
    plain.kernels.len()
}

#[test]
fn packed_batches_read_the_same_records() {
    let mut kernels = 0;
    if let Some(dir) = nsys_fixture_dir() {
        for path in all_fixtures(&dir) {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let db = NativeDb::open(&path).unwrap();
            kernels += same_both_ways(&name, &db, &[1, 7, 4096]);
        }
    }
    for preset in ["demo", "dp4-nvtx", "tp4-sym", "ep4-alltoall"] {
        let config = synth::preset(preset).unwrap().config;
        let run = synth::generate(&config);
        for rep in &run.reports {
            let mut conn = rusqlite::Connection::open_in_memory().unwrap();
            synth::write::write_report(&mut conn, rep).unwrap();
            let db = NativeDb::from_connection(conn);
            kernels += same_both_ways(&format!("{preset}-{}", rep.host), &db, &[3, 1000]);
        }
    }
    assert!(kernels > 1000, "{kernels} kernels compared");
}
