//! Times the pattern analyses' stages on a run directory, round after round, for a profiler
//! (`perf record -D <ms to load>`): `cargo run --release -p analyses --example patterns_profile
//! -- DIR [ROUNDS]`. The benchmark (`ncclscope-bench patterns`) gives the figures; this says
//! where they go.

use analyses::patterns::notes::Notes;
use analyses::patterns::{comm_matrix, perf_model, Prepared, RunFacts, Totals};
use load::{LogLoader, Session};
use pipeline::{analyse, UserSizes};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("a run directory"));
    let rounds: usize = args
        .next()
        .map_or(5, |s| s.parse().expect("a number of rounds"));
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("a readable directory")
        .map(|e| e.expect("an entry").path())
        .collect();
    paths.sort();
    let mut session = Session::default();
    for p in &paths {
        let name = p.display().to_string();
        if name.ends_with(".log") {
            let bytes = std::fs::read(p).expect("a readable log");
            let mut loader = LogLoader::new(&name, session.next_file_index());
            loader.feed(&bytes);
            session.add_log(loader.finish(bytes.len() as u64));
        } else if name.ends_with(".sqlite") {
            let db = sqlsource_native::NativeDb::open(p).expect("an export");
            session.add_export(&db, &name, 0);
        }
    }
    let analysis = analyse(&session, &UserSizes::default());
    let hw = analyses::hardware_from_topology(&session).unwrap_or_else(theory::Hardware::a100);
    eprintln!("loaded and analysed; rounds follow");
    for _ in 0..rounds {
        let t = Instant::now();
        let facts = RunFacts::of(&session, &analysis);
        let a = t.elapsed();
        let mut notes = Notes::default();
        let mut totals = Totals::of(&session, &analysis, &mut notes);
        let b = t.elapsed();
        totals.attribute_time(&analysis, &mut notes);
        let c = t.elapsed();
        let prepared = Prepared {
            facts,
            totals,
            notes,
        };
        let m = comm_matrix(&prepared);
        let d = t.elapsed();
        let model = perf_model(&analysis, &prepared, &hw);
        let e = t.elapsed();
        eprintln!(
            "facts {a:?}, sums {:?}, time {:?}, matrix {:?} ({} entries), model {:?} ({} groups)",
            b - a,
            c - b,
            d - c,
            m.entries.len(),
            e - d,
            model.groups.len()
        );
    }
}
