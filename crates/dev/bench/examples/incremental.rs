//! Time to add the last file of a run: incremental analysis (with the previous analysis and
//! timeline) against a from-scratch one, same session, alternating rounds.
//!
//! `cargo run --release -p ncclscope-bench --example incremental -- DIR [log|export] [ROUNDS]`
//! loads every log and export of DIR but the last log (or the last export), analyses, adds
//! that file, then times per round `analyse_incremental` + `timeline::build_incremental` from the
//! analysis before the file, and `analyse` + `timeline::build`.

use load::Session;
use pipeline::{analyse, analyse_incremental, UserSizes};
use std::path::PathBuf;
use std::time::Instant;
use timeline::build_incremental;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(
        args.get(1)
            .expect("usage: incremental_bench DIR [log|export] [ROUNDS]"),
    );
    let last_kind = args.get(2).map_or("log", String::as_str);
    let rounds: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(2);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("log" | "sqlite")
            )
        })
        .collect();
    files.sort();
    let ext = if last_kind == "export" {
        "sqlite"
    } else {
        "log"
    };
    let last = files
        .iter()
        .rposition(|p| p.extension().and_then(|e| e.to_str()) == Some(ext))
        .expect("a file of that kind");
    let last = files.remove(last);
    let user = UserSizes::default();
    let mut session = Session::default();
    let t = Instant::now();
    for f in &files {
        ncclscope_cli::inputs::load(&mut session, f);
    }
    println!(
        "loaded {} files in {:.2} s",
        files.len(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let mut before = analyse(&session, &user);
    let mut before_timeline = timeline::build(&session, &before.processes, &before.clocks);
    println!(
        "analysis + timeline before the last file: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    ncclscope_cli::inputs::load(&mut session, &last);
    println!("added {}", last.display());
    for round in 0..rounds {
        // Incremental: from the analysis before the file (rebuilt between rounds).
        let t = Instant::now();
        let (mut inc, mut rerun) = analyse_incremental(&session, &user, Some(before));
        let timeline = build_incremental(&session, &mut inc, Some(before_timeline), &mut rerun);
        let incremental = t.elapsed().as_secs_f64();
        drop((inc, timeline));
        let t = Instant::now();
        let scratch = analyse(&session, &user);
        let scratch_timeline = timeline::build(&session, &scratch.processes, &scratch.clocks);
        let from_scratch = t.elapsed().as_secs_f64();
        drop((scratch, scratch_timeline));
        println!(
            "round {round}: incremental {incremental:.2} s ({}), from scratch {from_scratch:.2} s, ratio {:.1}×",
            rerun.summary(),
            from_scratch / incremental
        );
        if round + 1 < rounds {
            // The state before the file again, for the next round.
            let mut s2 = Session::default();
            for f in &files {
                ncclscope_cli::inputs::load(&mut s2, f);
            }
            before = analyse(&s2, &user);
            before_timeline = timeline::build(&s2, &before.processes, &before.clocks);
        } else {
            break;
        }
    }
}
