//! PyTorch profiler traces through the pipeline: the real traces (DLRM's eight ranks as one
//! run; process groups against `distributedInfo`, read by a plain `serde_json` parse), the
//! generator's traces against their truth (ranks, communicators, process groups, labels,
//! operations), and traces beside the NCCL logs of the same run (each trace's kernels joined to
//! its log's lines, in whichever order the files come).

use load::{sniff, InputKind, LogLoader, Session, TraceLoader, SNIFF_BYTES};
use pipeline::{analyse, UserSizes};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;
use synth::kineto::{KinetoRun, KinetoStyle, TraceTruth};

/// Adds one file by its content, as the command does.
fn add(session: &mut Session, name: &str, bytes: &[u8]) {
    match sniff(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        InputKind::Kineto => {
            let mut l = TraceLoader::new(name);
            for c in bytes.chunks(1 << 20) {
                l.feed(c);
            }
            session.add_trace(l.finish(bytes.len() as u64));
        }
        InputKind::NcclLog | InputKind::Gzip => {
            let mut l = LogLoader::new(name, session.next_file_index());
            l.feed(bytes);
            session.add_log(l.finish(bytes.len() as u64));
        }
        other => panic!("{name}: sniffed as {other:?}"),
    }
}

/// A session of the files at `paths`.
fn session_of(paths: &[PathBuf]) -> Session {
    let mut session = Session::default();
    for p in paths {
        add(
            &mut session,
            &p.display().to_string(),
            &std::fs::read(p).unwrap(),
        );
    }
    session
}

/// A session of every rank's trace of `run` written in `style`, with their truths.
fn generated_session(run: &KinetoRun, style: &KinetoStyle) -> (Session, Vec<TraceTruth>) {
    let mut session = Session::default();
    let mut truths = Vec::new();
    for r in 0..run.world() {
        let mut bytes = Vec::new();
        truths.push(run.write_rank(r, style, &mut bytes).unwrap());
        add(&mut session, &synth::kineto::trace_name(r, false), &bytes);
    }
    (session, truths)
}

fn real(filter: &str) -> Vec<PathBuf> {
    testkit::fixtures::files("kineto", "gz")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(filter))
        .collect()
}

fn document(path: &PathBuf) -> Value {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    serde_json::from_slice(&text).unwrap()
}

#[test]
fn the_eight_dlrm_ranks_load_as_one_run() {
    let paths = real("dlrm");
    if paths.is_empty() {
        return;
    }
    let session = session_of(&paths);
    let a = analyse(&session, &UserSizes::default());
    assert_eq!(a.processes.len(), 8);
    // Each rank is its trace's distributedInfo rank.
    for (p, path) in session.traces().iter().zip(&paths) {
        let doc = document(path);
        let rank = doc["distributedInfo"]["rank"].as_u64().unwrap() as u32;
        let s = a
            .processes
            .iter()
            .find(|s| &s.process == p.owner())
            .unwrap();
        assert_eq!(s.global_rank, rank, "{}", path.display());
        assert!(s.rank_from_init);
        assert_eq!((s.kernels, s.matched_kernels), (8, 8));
        let ops: BTreeMap<&str, u64> = s.ops.iter().map(|(o, (n, _))| (o.name(), *n)).collect();
        assert_eq!(ops, BTreeMap::from([("AllReduce", 3), ("AllToAll", 5)]));
    }
    let ranks: Vec<u32> = a.processes.iter().map(|p| p.global_rank).collect();
    assert_eq!(ranks, (0..8).collect::<Vec<_>>());
    // One communicator: the world, the only group these traces know.
    assert_eq!(a.communicators.comms.len(), 1);
    let c = &a.communicators.comms[0];
    assert_eq!((c.size, c.members.len()), (8, 8));
    assert_eq!(c.global_ranks, (0..8).collect::<Vec<_>>());
    let g = a.process_groups[0].as_ref().expect("its group");
    assert!(g.assumed_world && g.name.is_none());
    // Every kernel matched to its operation; every rank's clock fitted on the collectives.
    for pm in &a.alignments.processes {
        assert_eq!(pm.matched_kernels(), pm.kernels.len() as u64);
    }
    assert_eq!(a.clocks.ranks.len(), 8);
    assert!(a.clocks.ranks.values().all(|c| c.samples >= 8));
    for p in &a.processes {
        assert_eq!(
            p.kernel_tally.by_type,
            BTreeMap::from([("AllReduce".into(), 3), ("SendRecv".into(), 5)])
        );
    }
    assert_eq!(a.profiler_steps.len(), 8, "one ProfilerStep per rank");
    assert_eq!(a.iterations, Some(1));
}

/// Every communicator a trace names a group for has the group's size, ranks and description
/// as `distributedInfo.pg_config` (read independently) gives them.
#[test]
fn process_groups_are_distributed_infos() {
    let mut checked = 0;
    for filter in ["HTA-nccl_parser", "TraceLens", "HTA-sampled"] {
        let paths = real(filter);
        if paths.is_empty() {
            return;
        }
        let session = session_of(&paths);
        let a = analyse(&session, &UserSizes::default());
        let doc = document(&paths[0]);
        let info = &doc["distributedInfo"];
        let world = info["world_size"].as_u64().unwrap() as u32;
        let configs = info["pg_config"].as_array().cloned().unwrap_or_default();
        for (c, g) in a.communicators.comms.iter().zip(&a.process_groups) {
            let g = g
                .as_ref()
                .expect("every communicator of a trace is a group");
            let present: BTreeSet<u32> = paths
                .iter()
                .map(|p| document(p)["distributedInfo"]["rank"].as_u64().unwrap() as u32)
                .collect();
            match &g.name {
                Some(name) => {
                    let cfg = configs
                        .iter()
                        .find(|x| x["pg_name"] == name.as_str())
                        .unwrap_or_else(|| panic!("{filter}: group {name} in pg_config"));
                    assert_eq!(
                        u64::from(c.size),
                        cfg["pg_size"].as_u64().unwrap(),
                        "{filter}"
                    );
                    let ranks: BTreeSet<u32> = cfg["ranks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r.as_u64().unwrap() as u32)
                        .collect();
                    let want: Vec<u32> = ranks.intersection(&present).copied().collect();
                    assert_eq!(c.global_ranks, want, "{filter}: group {name}");
                    assert_eq!(
                        g.description.as_deref(),
                        cfg["pg_desc"].as_str(),
                        "{filter}"
                    );
                }
                None => {
                    assert!(
                        configs.is_empty(),
                        "{filter}: a world assumed only without pg_config"
                    );
                    assert_eq!(c.size, world);
                    assert_eq!(c.global_ranks, present.iter().copied().collect::<Vec<_>>());
                }
            }
            checked += 1;
        }
        // Each trace's kernels are all its process's, all matched.
        for pm in &a.alignments.processes {
            assert_eq!(pm.matched_kernels(), pm.kernels.len() as u64, "{filter}");
        }
    }
    assert!(checked >= 4, "{checked} communicators checked");
}

/// The generator's traces of a run, all ranks, read back: ranks, communicators and their
/// process groups, the labels the groups give, operations and kernels per type, steps.
#[test]
fn generated_traces_read_back_to_their_truth() {
    for (preset, style) in [
        ("tp2pp2", KinetoStyle::modern()),
        (
            "ep4-alltoall",
            KinetoStyle {
                naming: synth::kineto::GroupNaming::DeviceMesh,
                seq: true,
                kernel_args: false,
                ..KinetoStyle::modern()
            },
        ),
        ("tp2pp2", KinetoStyle::legacy()),
    ] {
        let cfg = synth::preset(preset).unwrap().config;
        let run = KinetoRun::new(&cfg);
        let groups = run.groups(&style);
        let (session, truths) = generated_session(&run, &style);
        let what = format!("{preset} {style:?}");
        let a = analyse(&session, &UserSizes::default());
        assert_eq!(a.processes.len() as u32, run.world(), "{what}");
        for t in &truths {
            let p = a.processes.iter().find(|p| p.process.pid == t.pid).unwrap();
            assert_eq!(p.global_rank, t.global_rank, "{what}");
            assert_eq!(p.kernels as usize, t.kernels.len(), "{what}");
            let mut ops: BTreeMap<String, u64> = BTreeMap::new();
            let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
            for k in &t.kernels {
                *ops.entry(k.op.clone()).or_default() += 1;
                *kinds.entry(k.kernel_op.clone()).or_default() += 1;
            }
            let got: BTreeMap<String, u64> = p
                .ops
                .iter()
                .map(|(o, (n, _))| (o.name().to_string(), *n))
                .collect();
            assert_eq!(got, ops, "{what}: rank {}", t.global_rank);
            assert_eq!(
                p.kernel_tally.by_type, kinds,
                "{what}: rank {}",
                t.global_rank
            );
        }
        if style.process_groups {
            // Every group with kernels is a communicator with its ranks, name and description;
            // a group that names one dimension labels it so.
            let used: BTreeSet<usize> = truths
                .iter()
                .flat_map(|t| t.kernels.iter().map(|k| k.group))
                .collect();
            for &gi in &used {
                let g = &groups[gi];
                let c = (0..a.communicators.comms.len())
                    .find(|&c| {
                        a.communicators.comms[c].global_ranks == g.global_ranks
                            && a.process_groups[c].as_ref().and_then(|p| p.name.as_deref())
                                == Some(g.pg_name.as_str())
                    })
                    .unwrap_or_else(|| {
                        panic!("{what}: group {} ({:?})", g.pg_name, g.global_ranks)
                    });
                let pg = a.process_groups[c].as_ref().unwrap();
                assert_eq!(
                    pg.description.as_deref(),
                    Some(g.pg_desc.as_str()),
                    "{what}"
                );
                let label = a.layout.comms.iter().find(|l| l.comm == c).unwrap();
                // The description names the group's dimension; the label is the inference's
                // where it had evidence (said to agree or not), else the group's.
                if let Some(implied) = pg.implies {
                    assert_eq!(implied.name(), g.parallelism, "{what}: {}", g.pg_desc);
                    let agrees = label.parallelism == implied;
                    assert!(
                        agrees || label.evidence.ends_with(": disagrees"),
                        "{what}: {}",
                        label.evidence
                    );
                    let verdict = (!pg.labels).then_some(agrees);
                    assert_eq!(pipeline::agrees(Some(label), pg), verdict, "{what}");
                }
            }
        } else {
            assert_eq!(a.communicators.comms.len(), 1, "{what}: the world alone");
        }
        assert_eq!(
            a.profiler_steps.len(),
            truths.iter().map(|t| t.steps.len()).sum::<usize>(),
            "{what}"
        );
        assert_eq!(a.clocks.ranks.len() as u32, run.world(), "{what}");
    }
}

/// With the NCCL logs of the same run, each trace's kernels are joined to its log's lines (the
/// log's operations are the process's, the aligner pairs them with the trace's kernels), and
/// the order the files come in changes nothing.
#[test]
fn logs_of_the_same_run_claim_the_traces() {
    let cfg = synth::preset("tp2pp2").unwrap().config;
    let run = synth::generate(&cfg);
    let traces = KinetoRun::new(&cfg);
    let style = KinetoStyle::modern();
    let trace_bytes: Vec<Vec<u8>> = (0..traces.world())
        .map(|r| {
            let mut b = Vec::new();
            traces.write_rank(r, &style, &mut b).unwrap();
            b
        })
        .collect();
    let mut analyses = Vec::new();
    for logs_first in [true, false] {
        let mut session = Session::default();
        let add_logs = |s: &mut Session| {
            for (name, bytes) in &run.files {
                add(s, name, bytes);
            }
        };
        let add_traces = |s: &mut Session| {
            for (r, b) in trace_bytes.iter().enumerate() {
                add(s, &synth::kineto::trace_name(r as u32, false), b);
            }
        };
        if logs_first {
            add_logs(&mut session);
            add_traces(&mut session);
        } else {
            add_traces(&mut session);
            add_logs(&mut session);
        }
        for t in session.traces() {
            let owner = t
                .claimed_by
                .as_ref()
                .expect("every trace claimed by its log");
            assert_eq!(owner.pid, t.process.pid);
            assert!(!owner.host.is_empty());
        }
        assert_eq!(
            session.logs().len(),
            run.files.len(),
            "the traces' operations left"
        );
        let a = analyse(&session, &UserSizes::default());
        let truth = &run.truth;
        assert_eq!(a.processes.len(), truth.ranks.len());
        let mut matched = 0u64;
        let mut kernels = 0u64;
        let mut algos = 0u64;
        for pm in &a.alignments.processes {
            kernels += pm.kernels.len() as u64;
            matched += pm.matched_kernels();
            for (_, m) in pm.matched() {
                algos += u64::from(
                    pm.log_ops
                        .get(m.first_line())
                        .is_some_and(|o| o.algo.is_some()),
                );
            }
        }
        assert!(kernels > 0);
        assert!(
            matched * 100 >= kernels * 99,
            "{matched} of {kernels} kernels matched"
        );
        assert!(algos > 0, "the logs' algorithms reach the traces' kernels");
        let summary: Vec<(u32, u64, u64, BTreeMap<String, u64>)> = a
            .processes
            .iter()
            .map(|p| {
                let ops = p
                    .ops
                    .iter()
                    .map(|(o, (n, _))| (o.name().to_string(), *n))
                    .collect();
                (p.global_rank, p.kernels, p.matched_kernels, ops)
            })
            .collect();
        // The logs' operations, counted as the generator's truth counts them.
        for (t, s) in truth.ranks.iter().zip(&summary) {
            let want: BTreeMap<String, u64> = t
                .ops_by_type
                .iter()
                .filter(|(_, &n)| n > 0)
                .map(|(k, &n)| (k.clone(), n))
                .collect();
            assert_eq!(s.3, want, "rank {}", t.global_rank);
        }
        analyses.push(summary);
    }
    assert_eq!(
        analyses[0], analyses[1],
        "logs first or traces first: the same run"
    );
}

#[test]
fn traces_are_recognised_by_content() {
    for p in real("") {
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(
            sniff(&bytes[..bytes.len().min(SNIFF_BYTES)]),
            InputKind::Kineto,
            "{}",
            p.display()
        );
        let doc = document(&p);
        let plain = serde_json::to_vec(&doc).unwrap();
        assert_eq!(
            sniff(&plain[..plain.len().min(SNIFF_BYTES)]),
            InputKind::Kineto
        );
    }
    assert_eq!(sniff(b"{\"traceEvents\": []}"), InputKind::Kineto);
    assert_eq!(sniff(b"{\"other\": 1}"), InputKind::Text);
    assert_eq!(InputKind::Kineto.label(), "kineto");
}

/// Traces with `Seq` beside their logs: each kernel joined to its log line by communicator and
/// sequence, exactly the line the generator's truth gives it (no alignment ran: no stream map
/// was learned); with lines missing from the logs the sequence cannot join every kernel, and
/// the aligner joins them instead.
#[test]
fn seq_joins_kernels_to_their_lines() {
    for drop_pct in [0.0, 5.0] {
        let mut cfg = synth::preset("tp4").unwrap().config;
        cfg.model.iterations = 2;
        cfg.imperfections.drop_log_pct = drop_pct;
        let run = synth::generate(&cfg);
        let traces = KinetoRun::new(&cfg);
        let style = KinetoStyle {
            seq: true,
            ..KinetoStyle::modern()
        };
        let mut session = Session::default();
        for (name, bytes) in &run.files {
            add(&mut session, name, bytes);
        }
        for r in 0..traces.world() {
            let mut b = Vec::new();
            traces.write_rank(r, &style, &mut b).unwrap();
            add(&mut session, &synth::kineto::trace_name(r, false), &b);
        }
        let a = analyse(&session, &UserSizes::default());
        for pm in &a.alignments.processes {
            let seq_joined = pm.alignment.report.stream_map.is_empty();
            assert_eq!(seq_joined, drop_pct == 0.0, "{:?}", pm.process);
            if !seq_joined {
                assert!(pm.matched_kernels() * 10 >= pm.kernels.len() as u64 * 9);
                continue;
            }
            // The truth's kernels of this process, in start order, with their lines.
            let mut truth: Vec<&synth::truth::TruthKernel> = run
                .truth
                .kernels
                .iter()
                .filter(|k| k.pid == pm.process.pid)
                .collect();
            let report = run
                .reports
                .iter()
                .find(|r| r.host == pm.process.host.as_str())
                .unwrap();
            let start = |k: &synth::truth::TruthKernel| {
                report
                    .kernels
                    .iter()
                    .find(|r| r.pid == k.pid && r.correlation_id == k.correlation_id)
                    .map(|r| (r.start_ns, r.correlation_id))
            };
            truth.sort_by_key(|k| start(k));
            assert_eq!(truth.len(), pm.kernels.len());
            for (i, (w, m)) in truth.iter().zip(pm.alignment.per_kernel.iter()).enumerate() {
                let want = w.log_op.as_ref().map(|l| (l.comm.clone(), l.op_count));
                let got = m.map(|m| {
                    let op = pm.log_ops.get(m.first_line()).unwrap();
                    (format!("0x{:x}", op.comm), op.op_count)
                });
                assert_eq!(got, want, "{:?} kernel {i}", pm.process);
            }
        }
    }
}

/// The step analysis of generated traces: with `record_function` stage ranges inside each
/// `ProfilerStep#N` (TorchRec's `## forward ##` names), each step's frontier is what the truth's
/// ranges give (each rank's cumulative stage time, the slowest rank's at every boundary); with
/// the profiler's steps alone, each step is one stage, `step`, as long as the slowest rank's.
#[test]
fn profiler_steps_and_their_stage_ranges_give_the_step_analysis() {
    let cfg = synth::preset("tp2pp2").unwrap().config;
    let run = KinetoRun::new(&cfg);
    let mut styles: Vec<KinetoStyle> = KinetoStyle::variations().into_iter().step_by(5).collect();
    styles.extend([KinetoStyle::modern(), KinetoStyle::legacy()]);
    assert!(styles.iter().any(|s| s.stage_ranges) && styles.iter().any(|s| !s.stage_ranges));
    for style in styles {
        let (session, truths) = generated_session(&run, &style);
        let what = format!("{style:?}");
        let a = analyse(&session, &UserSizes::default());
        let report =
            analyses::steps::analyse(&session, &a, &analyses::steps::StepOptions::default(), None)
                .unwrap_or_else(|| panic!("{what}: no steps"));
        assert_eq!(report.source, analyses::steps::Source::Nvtx, "{what}");
        let nvtx = report.nvtx.as_ref().unwrap();
        assert_eq!(nvtx.processes as u32, run.world(), "{what}");
        assert_eq!(nvtx.whole_steps, !style.stage_ranges, "{what}");
        // Each rank's durations per step: the truth's stages in order, then the rest.
        let mut expected: BTreeMap<u64, Vec<Vec<f64>>> = BTreeMap::new();
        for t in &truths {
            for &(n, s, e) in &t.steps {
                let ms = |a: i64, b: i64| (b - a) as f64 / 1e6;
                let mut d: Vec<f64> = t
                    .stages
                    .iter()
                    .filter(|x| x.0 == n)
                    .map(|x| ms(x.2, x.3))
                    .collect();
                let rest = ms(s, e) - d.iter().sum::<f64>();
                d.push(rest);
                expected.entry(n).or_default().push(d);
            }
        }
        let names: Vec<&str> = report.stage_names.iter().map(String::as_str).collect();
        if style.stage_ranges {
            assert_eq!(
                names,
                ["forward", "backward", "optimizer", "other"],
                "{what}"
            );
        } else {
            assert_eq!(names, ["step"], "{what}");
        }
        assert_eq!(report.per_step.len(), expected.len(), "{what}");
        for row in &report.per_step {
            let ranks = &expected[&row.step];
            assert_eq!(row.ranks as usize, ranks.len(), "{what}");
            let stages = names.len();
            for k in 0..stages {
                // Cumulative up to stage k (the whole step for the one-stage case).
                let frontier = ranks
                    .iter()
                    .map(|d| {
                        if stages == 1 {
                            d.iter().sum::<f64>()
                        } else {
                            d[..=k].iter().sum::<f64>()
                        }
                    })
                    .fold(f64::MIN, f64::max);
                assert!(
                    (row.frontier_ms[k] - frontier).abs() < 1e-6,
                    "{what}: step {} stage {k}: {} vs {frontier}",
                    row.step,
                    row.frontier_ms[k]
                );
            }
        }
    }
}

/// Real traces' `record_function` ranges give their steps and stages: the DLRM ranks' one
/// `ProfilerStep` each, HTA's three with `## forward ##`, `## backward ##` and the optimizer's.
#[test]
fn real_traces_give_steps_and_stages_from_their_ranges() {
    for (filter, ranks, steps, stages) in [
        ("dlrm", 8, 1, &["data", "forward", "backward"][..]),
        (
            "HTA-nccl_parser",
            1,
            3,
            &["forward", "backward", "optimizer"][..],
        ),
        (
            "HTA-sampled_rank0",
            1,
            2,
            &["data", "forward", "backward"][..],
        ),
    ] {
        let paths = real(filter);
        if paths.is_empty() {
            return;
        }
        let session = session_of(&paths);
        let a = analyse(&session, &UserSizes::default());
        let report =
            analyses::steps::analyse(&session, &a, &analyses::steps::StepOptions::default(), None)
                .unwrap_or_else(|| panic!("{filter}: no steps"));
        assert_eq!(report.source, analyses::steps::Source::Nvtx, "{filter}");
        assert_eq!(report.ranks.len(), ranks, "{filter}");
        assert_eq!(report.per_step.len(), steps, "{filter}");
        for s in stages {
            assert!(
                report.stage_names.iter().any(|n| n == s),
                "{filter}: {s} in {:?}",
                report.stage_names
            );
        }
        // Each step as long as its ProfilerStep range (the slowest rank's), to the microsecond
        // (synchronised times are f64 at epoch magnitude), where the residual stage covers what
        // no stage range does.
        for row in &report.per_step {
            let longest = a
                .profiler_steps
                .iter()
                .filter(|p| p.step == row.step)
                .map(|p| (p.end_ns - p.start_ns) as f64 / 1e6)
                .fold(f64::MIN, f64::max);
            let total = *row.frontier_ms.last().unwrap();
            if report.stage_names.last().is_some_and(|n| n == "other") {
                // The time outside every stage range is the last stage: the whole step.
                assert!(
                    (total - longest).abs() < 1e-3,
                    "{filter}: step {}",
                    row.step
                );
            } else {
                assert!(total <= longest + 1e-3, "{filter}: step {}", row.step);
            }
        }
    }
}
