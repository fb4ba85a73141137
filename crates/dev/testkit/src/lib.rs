//! Shared helpers of the cross-crate tests in `tests/*.rs`.

use std::path::PathBuf;

/// The real public fixtures' root (`real_fixtures`: `NCCLSCOPE_REAL_FIXTURES`, default
/// `../shared/fixtures/real`), or `None` with a printed notice when they are absent (CI sets the
/// variable and checks it exists).
pub fn real_fixtures() -> Option<PathBuf> {
    real_fixtures::dir("nccl").map(|_| real_fixtures::root())
}

/// A fresh empty directory for one test's outputs (per process, so parallel runs never share).
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("ncclscope-tests-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    dir
}

/// The session of a generator preset's run (its logs and exports loaded as the page loads
/// them), for tests that check an analysis of known inputs.
pub fn generated_session(preset: &str) -> load::Session {
    let p = synth::preset(preset).expect("a generator preset");
    let run = synth::generate_named(&p.config, Some(preset));
    let mut session = load::Session::default();
    for (i, (name, bytes)) in run.files.iter().enumerate() {
        let mut loader = load::LogLoader::new(name, i as u32);
        loader.feed(bytes);
        session.add_log(loader.finish(bytes.len() as u64));
    }
    for rep in &run.reports {
        let mut conn = rusqlite::Connection::open_in_memory().expect("an in-memory database");
        synth::write::write_report(&mut conn, rep).expect("the generator writes its report");
        let db = sqlsource_native::NativeDb::from_connection(conn);
        session.add_export(&db, &format!("report_{}.sqlite", rep.host), 0);
    }
    session
}
