//! Sessions for tests: files loaded as `ncclscope analyze` loads them (its own loader, so a
//! test sees what the command sees), or a generator run loaded from memory.

use load::{FileReport, LogLoader, Session};
use std::path::PathBuf;

/// Every file under `paths` (directories walked, files recognised by content) loaded into a new
/// session, with each file's report.
pub fn load_paths(paths: &[PathBuf]) -> (Session, Vec<FileReport>) {
    let mut session = Session::default();
    let files = ncclscope_cli::inputs::expand(paths).expect("the input paths can be listed");
    let reports = files
        .iter()
        .map(|f| ncclscope_cli::inputs::load(&mut session, f))
        .collect();
    (session, reports)
}

/// The session of a generated run: its logs and exports loaded as the page loads them (the
/// exports written into in-memory databases, never to disk).
pub fn of_run(run: &synth::Run) -> Session {
    let mut session = Session::default();
    for (name, bytes) in &run.files {
        let mut loader = LogLoader::new(name, session.next_file_index());
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

/// The session of a generator preset's run ([`of_run`]).
pub fn generated(preset: &str) -> Session {
    let p = synth::preset(preset).expect("a generator preset");
    of_run(&synth::generate_named(&p.config, Some(preset)))
}
