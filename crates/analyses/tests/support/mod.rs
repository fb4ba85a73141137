//! Generated runs loaded as the page loads them, and analysed.

#![allow(dead_code)]

use load::{LogLoader, Session};
use pipeline::{analyse, Analysis, UserSizes};

/// A generator run's logs and exports in a session, and its analysis.
pub fn analysed(config: &synth::RunConfig) -> (synth::Run, Session, Analysis) {
    let run = synth::generate(config);
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
    let analysis = analyse(&session, &UserSizes::default());
    (run, session, analysis)
}

/// A preset's configuration.
pub fn preset(name: &str) -> synth::RunConfig {
    synth::preset(name).expect("a generator preset").config
}

/// The presets small enough for a test (the scale presets left out).
pub fn small_presets() -> Vec<&'static str> {
    synth::presets()
        .into_iter()
        .filter(|p| p.config.layout.world() <= 16 && p.config.model.iterations <= 20)
        .map(|p| p.name)
        .collect()
}
