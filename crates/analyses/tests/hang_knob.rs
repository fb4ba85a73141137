//! The generator's hang knob (a rank stops logging at a chosen collective; a rank calls another
//! collective at one opCount) across layouts, seeds, NCCL versions, log shapes and the loss of
//! init lines: the diagnosis names the rank, the communicator (by its members) and the opCount
//! the generator planted, and never reports a mismatch the run does not have.
#![cfg(not(target_arch = "wasm32"))]

use analyses::diagnosis::{diagnose, Context, Diagnosis, Finding, Kind, Severity};
use ingest_nccl::{parse_bytes, ParsedLog};
use std::collections::BTreeSet;
use synth::hang::{Expected, Hang, HangKind};
use synth::{Launcher, Layout, Model, RunConfig};

fn model() -> Model {
    Model {
        layers: 2,
        global_batch: 8,
        micro_batch: 1,
        iterations: 2,
        ..Model::thesis()
    }
}

/// Layouts with communicators of one size that only sequences or commIds tell apart.
fn layouts() -> Vec<(&'static str, Layout, u32)> {
    vec![
        (
            "dp4",
            Layout {
                dp: 4,
                ..Layout::default()
            },
            4,
        ),
        (
            "tp2pp2dp2",
            Layout {
                tp: 2,
                pp: 2,
                dp: 2,
                ..Layout::default()
            },
            4,
        ),
        (
            "tp4dp2",
            Layout {
                tp: 4,
                dp: 2,
                ..Layout::default()
            },
            4,
        ),
    ]
}

/// Seeds per layout (each also turns the version, timestamps, combined log, launcher and init
/// lines).
const SEEDS: u64 = 20;

struct Case {
    name: String,
    cfg: RunConfig,
    strip_inits: bool,
}

fn cases(kind: HangKind) -> Vec<Case> {
    let versions = ["2.18.3", "2.21.5", "2.27.5"];
    let mut out = Vec::new();
    for (li, (lname, layout, gpn)) in layouts().into_iter().enumerate() {
        for seed in 0..SEEDS {
            let i = li * SEEDS as usize + seed as usize;
            let mut cfg = RunConfig::new(layout.clone(), model());
            cfg.gpus_per_node = gpn;
            cfg.nodes = layout.world().div_ceil(gpn);
            cfg.seed = 1000 + seed;
            cfg.nccl_version = versions[i % versions.len()].into();
            cfg.timestamps = i.is_multiple_of(2);
            cfg.combined_log = i % 3 == 1;
            cfg.launcher = Launcher::ALL[i % Launcher::ALL.len()];
            let world = layout.world();
            cfg.hang = Some(Hang {
                rank: (seed as u32 * 3 + 1) % world,
                call: 5 + 7 * seed as usize,
                kind,
                // PyTorch's watchdog lines in the same files on every third run.
                watchdog: seed % 3 == 2,
                errors: false,
            });
            out.push(Case {
                name: format!("{lname}-seed{seed}-{}", cfg.nccl_version),
                strip_inits: seed % 2 == 1,
                cfg,
            });
        }
    }
    out
}

/// The run's logs, parsed; without their communicator set-up lines when `strip_inits` (a
/// fragment pasted from the middle of a run: no commId to group by).
fn logs(cfg: &RunConfig, strip_inits: bool) -> Vec<ParsedLog> {
    let run = synth::generate(cfg);
    run.files
        .iter()
        .enumerate()
        .map(|(i, (name, bytes))| {
            let text = String::from_utf8_lossy(bytes);
            let kept: String = text
                .split_inclusive('\n')
                .filter(|l| {
                    !strip_inits || !(l.contains("Init COMPLETE") || l.contains("Init START"))
                })
                .collect();
            parse_bytes(name, i as u32, kept.as_bytes())
        })
        .collect()
}

fn run(case: &Case) -> (Diagnosis, Expected) {
    let expected = synth::hang::expected(&case.cfg)
        .unwrap_or_else(|| panic!("{}: the knob found no collective", case.name));
    let logs = logs(&case.cfg, case.strip_inits);
    let refs: Vec<&ParsedLog> = logs.iter().collect();
    (diagnose(&refs, Context::default()), expected)
}

/// The global ranks of a communicator of the diagnosis.
fn members(d: &Diagnosis, id: &str) -> BTreeSet<u32> {
    d.stopped
        .iter()
        .find(|c| c.communicator == id)
        .unwrap_or_else(|| panic!("communicator {id} in the table"))
        .members
        .iter()
        .filter_map(|m| m.rank)
        .collect()
}

/// The watchdog timeout the diagnosis tied to this communicator and opCount.
fn timeout_on<'a>(d: &'a Diagnosis, id: &str, op_count: u64) -> Option<&'a Finding> {
    d.findings.iter().find(|f| {
        f.kind == Kind::Timeout
            && f.communicator.as_deref() == Some(id)
            && f.op_count.as_deref() == Some(format!("{op_count:x}").as_str())
    })
}

fn show(d: &Diagnosis) -> String {
    d.findings
        .iter()
        .map(|f| format!("  {:?}/{:?} {}\n", f.severity, f.kind, f.message))
        .collect()
}

#[test]
fn a_rank_that_stops_is_named_with_its_communicator_and_last_opcount() {
    for case in cases(HangKind::Stop) {
        let (d, e) = run(&case);
        let why = format!("{}: expected {e:?}\n{}", case.name, show(&d));
        // The first stop named is the rank's.
        let first: &Finding = d
            .findings
            .iter()
            .find(|f| f.kind == Kind::Behind)
            .unwrap_or_else(|| panic!("no behind finding: {why}"));
        assert_eq!(first.ranks, [e.rank], "{why}");
        // On the communicator it never called, at its last opCount there (the first stop named
        // unless the data leave the communicators' split to a guess, when the rank may first be
        // named where the others' wait shows on another communicator).
        let want: BTreeSet<u32> = e.comm_ranks.iter().copied().collect();
        let last = format!("{:x}", e.op_count - 1);
        let on_comm = d
            .findings
            .iter()
            .filter(|f| f.kind == Kind::Behind && f.ranks == [e.rank])
            .find(|f| {
                f.op_count.as_deref() == Some(last.as_str())
                    && f.communicator
                        .as_deref()
                        .is_some_and(|id| members(&d, id) == want)
            })
            .unwrap_or_else(|| panic!("no stop on the communicator: {why}"));
        let guessed = on_comm
            .grouped_by
            .as_deref()
            .is_some_and(|g| g.contains("ambiguous"));
        if !guessed {
            assert!(std::ptr::eq(first, on_comm), "{why}");
        }
        let id = on_comm.communicator.as_deref().expect("a communicator");
        let watchdog = case.cfg.hang.as_ref().is_some_and(|h| h.watchdog);
        if watchdog {
            // The timeouts corroborate the stop: critical, and tied to the same communicator
            // and opCount, naming the rank that never enqueued it.
            assert_eq!(first.severity, Severity::Critical, "{why}");
            assert_eq!(on_comm.severity, Severity::Critical, "{why}");
            let t = timeout_on(&d, id, e.op_count).unwrap_or_else(|| panic!("no timeout: {why}"));
            assert_eq!(t.ranks, [e.rank], "{why}");
            assert!(
                t.message.contains(&format!("SeqNum {}", e.op_count + 1)),
                "{why}"
            );
            // glog's stamp of the first timeout line: `E` and the month and day of the run.
            assert!(
                t.time.as_deref().is_some_and(|s| s.starts_with("E11")),
                "{why}"
            );
        } else if e.comm_ranks.len() >= 3 && !guessed {
            // The others all parked at the same collective: the classic picture, a warning.
            assert_eq!(on_comm.severity, Severity::Warning, "{why}");
        }
        assert!(
            d.findings.iter().all(|f| f.kind != Kind::Mismatch),
            "a stop is no mismatch: {why}"
        );
    }
}

#[test]
fn a_rank_that_calls_another_collective_is_the_odd_one_out() {
    for case in cases(HangKind::Mismatch) {
        let (d, e) = run(&case);
        let why = format!("{}: expected {e:?}\n{}", case.name, show(&d));
        let found: Vec<&Finding> = d
            .findings
            .iter()
            .filter(|f| f.kind == Kind::Mismatch)
            .collect();
        assert_eq!(found.len(), 1, "one mismatch: {why}");
        let m = found[0];
        assert_eq!(
            m.op_count.as_deref(),
            Some(format!("{:x}", e.op_count).as_str()),
            "{why}"
        );
        let id = m.communicator.as_deref().expect("a communicator");
        let want: BTreeSet<u32> = e.comm_ranks.iter().copied().collect();
        assert_eq!(members(&d, id), want, "{why}");
        if e.comm_ranks.len() >= 3 {
            assert_eq!(m.ranks, [e.rank], "{why}");
            // Critical, unless no init line, no stamp and the layout leave the split of
            // communicators of one size to a guess (consecutive or strided ranks).
            let guessed = m
                .grouped_by
                .as_deref()
                .is_some_and(|g| g.contains("ambiguous"));
            let want = if guessed {
                Severity::Warning
            } else {
                Severity::Critical
            };
            assert_eq!(m.severity, want, "{why}");
        } else {
            // Two members: the data cannot tell which one is wrong; both are named.
            assert!(m.ranks.contains(&e.rank), "{why}");
        }
        let odd = e.odd_op.expect("the odd call").name();
        assert!(m.message.contains(odd), "{why}");
        if case.cfg.hang.as_ref().is_some_and(|h| h.watchdog) {
            // Every member timed out in it, the odd one too.
            let t = timeout_on(&d, id, e.op_count).unwrap_or_else(|| panic!("no timeout: {why}"));
            let timed_out: BTreeSet<u32> = t.ranks.iter().copied().collect();
            assert_eq!(timed_out, want, "{why}");
        }
        if m.severity == Severity::Critical {
            assert_eq!(
                d.findings[0].kind,
                Kind::Mismatch,
                "most severe first: {why}"
            );
        }
        // Every rank the hang reaches waits in a collective: none is named as where it began.
        assert!(
            d.findings
                .iter()
                .filter(|f| f.kind == Kind::Behind)
                .all(|f| f.severity == Severity::Info),
            "{why}"
        );
    }
}

/// Without the knob the same runs hold no mismatch, no behind finding above info, no error.
#[test]
fn clean_runs_hold_no_false_findings() {
    for mut case in cases(HangKind::Stop) {
        case.cfg.hang = None;
        let logs = logs(&case.cfg, case.strip_inits);
        let refs: Vec<&ParsedLog> = logs.iter().collect();
        let d = diagnose(&refs, Context::default());
        let why = format!("{}\n{}", case.name, show(&d));
        assert!(
            d.findings
                .iter()
                .all(|f| f.severity == Severity::Info || f.kind == Kind::Config),
            "{why}"
        );
        assert!(d.findings.iter().all(|f| f.kind != Kind::Mismatch), "{why}");
    }
}
