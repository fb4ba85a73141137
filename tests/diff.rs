//! Two runs compared (`analyses::diff`, issue 35): generated pairs that differ in one known way
//! (one operation's bandwidth, one rank's links, the algorithm chosen, the layout, the world
//! size), each compared by both tests (the bootstrap and the rank test): the comparison must put
//! that change first. Two runs of the same configuration with different seeds show no
//! significant change; runs with too little in common say so instead of a table; a run that
//! failed to load leaves the other summarised.

use analyses::diff::{
    self, ChangeKind, Presence, RunDiff, RunProfile, Settings, Test, TestSettings,
};
use pipeline::{analyse, UserSizes};
use std::ffi::OsStr;
use std::sync::OnceLock;
use synth::variation::{ForcedAlgorithm, Variation};
use synth::{Layout, Model, RunConfig};

const TESTS: [Test; 2] = [Test::Bootstrap, Test::RankSum];

/// A small run of `layout` on 2-GPU nodes (so data parallelism crosses the network, where the
/// generator's NCCL picks Tree for large AllReduces): 4 layers, 3 iterations.
fn small(layout: Layout) -> RunConfig {
    let model = Model {
        layers: 4,
        global_batch: 16,
        iterations: 3,
        ..Model::thesis()
    };
    let mut c = RunConfig::new(layout, model);
    c.gpus_per_node = 2;
    c.nodes = c.layout.world().div_ceil(2);
    c
}

fn tp2dp2() -> RunConfig {
    small(Layout {
        tp: 2,
        dp: 2,
        ..Layout::default()
    })
}

fn dp(n: u32) -> RunConfig {
    small(Layout {
        dp: n,
        ..Layout::default()
    })
}

/// The run loaded (logs, and exports unless `logs_only`) and analysed as the page does it.
fn profile_of(c: &RunConfig, label: &str, logs_only: bool) -> RunProfile {
    let mut run = synth::generate(c);
    if logs_only {
        run.reports.clear();
    }
    let session = testkit::sessions::of_run(&run);
    let analysis = analyse(&session, &UserSizes::default());
    diff::profile(&session, &analysis, label)
}

fn profile(c: &RunConfig, label: &str) -> RunProfile {
    profile_of(c, label, false)
}

/// The base of the one-knob pairs (seed 1), made once.
fn base() -> &'static RunProfile {
    static BASE: OnceLock<RunProfile> = OnceLock::new();
    BASE.get_or_init(|| profile(&tp2dp2(), "base"))
}

fn with(variation: Variation) -> RunProfile {
    let mut c = tp2dp2();
    c.variation = variation;
    profile(&c, "new")
}

fn compare(base: &RunProfile, new: &RunProfile, method: Test) -> RunDiff {
    let settings = Settings {
        test: TestSettings {
            method,
            ..TestSettings::default()
        },
        ..Settings::default()
    };
    diff::compare(base, new, &settings)
}

/// The ranked list, for failure messages.
fn listed(d: &RunDiff) -> String {
    let mut s = format!("{}\n", d.summary);
    for c in &d.changes {
        s.push_str(&format!(
            "  {:?} {:.0} ns: {}\n",
            c.kind, c.impact_ns, c.what
        ));
    }
    s
}

#[test]
fn the_same_configuration_with_another_seed_changes_nothing() {
    for seed in [2, 3, 4] {
        let mut c = tp2dp2();
        c.seed = seed;
        same_as_base(&profile(&c, "new"));
    }
}

fn same_as_base(other: &RunProfile) {
    for method in TESTS {
        let d = compare(base(), other, method);
        assert!(d.common.comparable, "{}", listed(&d));
        assert!(d.changes.is_empty(), "{method:?}: {}", listed(&d));
        assert!(
            d.summary.starts_with("No significant change"),
            "{}",
            d.summary
        );
        assert!(d.signatures.iter().all(|s| s.presence == Presence::Both));
        assert!(d.signatures.iter().all(|s| !s.significant));
        assert!(d.communicators.iter().all(|c| !c.significant));
        // The seed moves every duration, not the medians' ratio by more than the jitter.
        let ratios: Vec<f64> = d.signatures.iter().filter_map(|s| s.time_ratio).collect();
        assert!(!ratios.is_empty());
        let big = d.signatures.iter().find(|s| s.key.bytes > 1 << 20).unwrap();
        assert!((big.time_ratio.unwrap() - 1.0).abs() < 0.05, "{big:?}");
        let step = d.steps.step.as_ref().expect("both runs mark iterations");
        assert!(!step.significant, "{step:?}");
    }
}

#[test]
fn one_operations_bandwidth_comes_first() {
    let slow = with(Variation {
        op_bandwidth: Some(("AllReduce".into(), 0.5)),
        ..Variation::default()
    });
    for method in TESTS {
        let d = compare(base(), &slow, method);
        let first = &d.changes[0];
        assert_eq!(first.kind, ChangeKind::Time, "{method:?}: {}", listed(&d));
        assert_eq!(first.signatures[0].op, "AllReduce");
        // Every signature that changed is an AllReduce, and the large ones changed: halving the
        // bandwidth nearly doubles a bandwidth-bound transfer.
        for s in d.signatures.iter().filter(|s| s.significant) {
            assert_eq!(s.key.op, "AllReduce", "{}", listed(&d));
        }
        let top = d
            .signatures
            .iter()
            .find(|s| s.key == first.signatures[0])
            .unwrap();
        assert!(top.time_ratio.unwrap() > 1.5, "{top:?}");
        assert!(top.bus_bw_ratio.unwrap() < 0.7, "{top:?}");
        assert!(top.impact_ns > 0.0);
        assert!(
            d.changes.iter().all(|c| c.kind != ChangeKind::Rank),
            "{}",
            listed(&d)
        );
        // The steps show it too: the forward stage holds tensor-parallel AllReduces.
        let forward = d
            .steps
            .stages
            .iter()
            .find(|s| s.stage == "forward")
            .unwrap();
        assert!(
            forward.significant && forward.ratio.unwrap() > 1.0,
            "{forward:?}"
        );
    }
}

#[test]
fn one_ranks_link_comes_first() {
    for rank in [3, 0] {
        let slow = with(Variation {
            rank_link: Some((rank, 0.4)),
            ..Variation::default()
        });
        for method in TESTS {
            let d = compare(base(), &slow, method);
            let first = &d.changes[0];
            assert_eq!(first.kind, ChangeKind::Rank, "{method:?}: {}", listed(&d));
            assert_eq!(first.ranks, [rank], "{}", listed(&d));
            assert!(first.what.starts_with(&format!("rank {rank}:")));
            assert!(d.changes[1..]
                .iter()
                .all(|c| c.impact_ns.abs() <= first.impact_ns));
            // The communicators it names are the ones the rank is in.
            for c in &first.communicators {
                assert!(c.contains(&rank.to_string()), "{c}");
            }
        }
    }
}

#[test]
fn the_algorithm_chosen_comes_first() {
    for time_factor in [1.4, 1.0] {
        let forced = with(Variation {
            algorithm: Some(ForcedAlgorithm {
                op: "AllReduce".into(),
                algo: "TREE".into(),
                time_factor,
            }),
            ..Variation::default()
        });
        for method in TESTS {
            let d = compare(base(), &forced, method);
            let first = &d.changes[0];
            assert_eq!(
                first.kind,
                ChangeKind::Algorithm,
                "{method:?}: {}",
                listed(&d)
            );
            assert!(
                first.what.contains("AllReduce algorithm RING → TREE"),
                "{}",
                first.what
            );
            let slower = d.signatures.iter().filter(|s| s.significant).count();
            if time_factor == 1.0 {
                // Another algorithm at the same speed: the algorithm is all that changed.
                assert_eq!(slower, 0, "{}", listed(&d));
                assert!(d.changes.iter().all(|c| c.kind == ChangeKind::Algorithm));
            } else {
                assert!(slower > 0, "{}", listed(&d));
                assert!(first.impact_ns > 0.0);
            }
        }
    }
}

#[test]
fn a_layout_change_comes_first() {
    let other = profile(&dp(4), "new");
    for method in TESTS {
        let d = compare(base(), &other, method);
        assert_eq!(d.changes[0].kind, ChangeKind::Layout, "{}", listed(&d));
        assert_eq!(d.changes[0].what, "layout DP2 TP2 → DP4");
        assert!(d.changes.iter().all(|c| c.kind != ChangeKind::World));
        // No tensor-parallel communicator in the new run: every one of the base's is alone.
        for c in d.communicators.iter().filter(|c| c.parallelism == "TP") {
            assert_eq!(c.presence, Presence::Base);
        }
    }
}

#[test]
fn different_world_sizes_compare_per_rank_and_say_so() {
    let (four, eight) = (profile(&dp(4), "dp4"), profile(&dp(8), "dp8"));
    for method in TESTS {
        let d = compare(&four, &eight, method);
        assert_eq!(d.changes[0].kind, ChangeKind::World, "{}", listed(&d));
        assert!(d.summary.contains("world size 4 → 8"), "{}", d.summary);
        assert_eq!(d.basis.per, "rank and iteration");
        assert!(d.common.comparable, "{}", listed(&d));
        // Each rank runs the same operations: twice the world, twice the count, the same count
        // per rank. The gradient buckets are padded to the data-parallel size: matched within 1 %.
        for s in d.signatures.iter().filter(|s| s.presence == Presence::Both) {
            assert_eq!(s.new.count, 2 * s.base.count, "{}", s.key.text());
            assert!((s.count_ratio.unwrap() - 1.0).abs() < 1e-9);
        }
        assert_eq!(d.common.base_only + d.common.new_only, 0, "{}", listed(&d));
        assert!(d.changes.iter().all(|c| c.kind != ChangeKind::Count));
    }
}

#[test]
fn runs_with_nothing_in_common_say_so() {
    let mut c = dp(4);
    c.model.hidden = 1024;
    c.model.layers = 6;
    let other = profile(&c, "other model");
    let d = compare(&profile(&dp(4), "base"), &other, Test::Bootstrap);
    assert!(!d.common.comparable);
    assert!(
        d.common.base_share < 0.2 || d.common.new_share < 0.2,
        "{:?}",
        d.common
    );
    assert!(d.signatures.is_empty(), "no table of noise");
    assert!(d.summary.contains("too little in common"), "{}", d.summary);
    assert!(
        d.changes.iter().all(|c| c.kind.class() != 2),
        "{}",
        listed(&d)
    );
}

#[test]
fn a_run_that_failed_to_load_leaves_the_other_summarised() {
    let d = diff::compare_loaded(
        Ok(base()),
        Err(("new/", "no NCCL log lines found")),
        &Settings::default(),
    );
    assert_eq!(d.base.signatures, base().signatures.len());
    assert_eq!(d.base.size.world_size, 4);
    assert_eq!(d.new.error.as_deref(), Some("no NCCL log lines found"));
    assert!(
        d.summary
            .contains("the new run (new/) could not be read: no NCCL log lines found"),
        "{}",
        d.summary
    );
    assert!(d.signatures.is_empty() && d.changes.is_empty());
}

/// Without exports there are no kernel times: the comparison still matches signatures and
/// counts, and says that it has no times.
#[test]
fn runs_without_exports_compare_by_count() {
    let a = profile_of(&tp2dp2(), "a", true);
    let mut c = tp2dp2();
    c.model.iterations = 6;
    let b = profile_of(&c, "b", true);
    assert_eq!(a.size.timed_operations, 0);
    let d = compare(&a, &b, Test::Bootstrap);
    assert!(d.summary.contains("No kernel times"), "{}", d.summary);
    assert_eq!(d.basis.per, "rank", "no NVTX iterations without exports");
    assert!(d.common.comparable);
    let first = &d.changes[0];
    assert_eq!(first.kind, ChangeKind::Count, "{}", listed(&d));
    // Twice the iterations: every per-iteration operation twice (the start-up ones once).
    let tp = d
        .signatures
        .iter()
        .find(|s| s.key.parallelism == "TP" && s.key.op == "AllReduce" && s.key.bytes > 1 << 20)
        .unwrap();
    assert!((tp.count_ratio.unwrap() - 2.0).abs() < 1e-9, "{tp:?}");
    assert!(d.signatures.iter().all(|s| s.time_ratio.is_none()));
}

/// The run of `c` as the files of its first node alone give it (one node's logs and export of
/// a two-node job: what a user often has).
fn first_node_of(c: &RunConfig, label: &str) -> RunProfile {
    let mut run = synth::generate(c);
    let host = run.reports[0].host.clone();
    run.files.retain(|(name, _)| name.contains(&host));
    run.reports.truncate(1);
    let session = testkit::sessions::of_run(&run);
    let analysis = analyse(&session, &UserSizes::default());
    diff::profile(&session, &analysis, label)
}

/// A run whose files cover half its world compares per rank seen: the same configuration shows
/// no change in counts, layout or communicators, each communicator it sees part of is paired
/// with the whole one, and the summary says what the files cover.
#[test]
fn part_of_a_worlds_files_compares_per_rank_seen() {
    let mut c = tp2dp2();
    c.seed = 2;
    let half = first_node_of(&c, "node 0");
    assert_eq!((half.size.ranks, half.size.world_size), (2, 4));
    for method in TESTS {
        let d = compare(base(), &half, method);
        assert!(d.common.comparable, "{}", listed(&d));
        assert!(
            d.changes.iter().all(|c| !matches!(
                c.kind,
                ChangeKind::Count | ChangeKind::Layout | ChangeKind::World
            )),
            "{}",
            listed(&d)
        );
        assert!(d.summary.contains("2 of 4 ranks"), "{}", d.summary);
        for s in d.signatures.iter().filter(|s| s.presence == Presence::Both) {
            let r = s.count_ratio.unwrap();
            assert!((r - 1.0).abs() < 1e-9, "{}: {r}", s.key.text());
        }
        let seen: Vec<_> = d
            .communicators
            .iter()
            .filter(|c| c.presence == Presence::Both)
            .collect();
        assert_eq!(seen.len(), half.comms.len(), "{:?}", d.communicators);
        assert!(seen.iter().all(|c| !c.significant), "{:?}", d.communicators);
    }
    // Half the files still show a slower AllReduce first.
    c.variation = Variation {
        op_bandwidth: Some(("AllReduce".into(), 0.5)),
        ..Variation::default()
    };
    let slow = first_node_of(&c, "node 0, slower AllReduce");
    for method in TESTS {
        let d = compare(base(), &slow, method);
        let first = &d.changes[0];
        assert_eq!(first.kind, ChangeKind::Time, "{method:?}: {}", listed(&d));
        assert_eq!(first.signatures[0].op, "AllReduce", "{}", listed(&d));
    }
}

/// The run of `c` as its exports alone give it (no NCCL log).
fn exports_of(c: &RunConfig, label: &str) -> RunProfile {
    let mut run = synth::generate(c);
    run.files.clear();
    let session = testkit::sessions::of_run(&run);
    let analysis = analyse(&session, &UserSizes::default());
    diff::profile(&session, &analysis, label)
}

/// Exports without logs compare their kernels by the operation their names give: the same
/// configuration changes nothing, and a slower AllReduce comes first.
#[test]
fn exports_alone_compare_their_kernels_by_name() {
    let a = exports_of(&tp2dp2(), "a");
    assert_eq!(a.size.ranks, 4);
    assert!(a.size.timed_operations > 0);
    assert!(!a.signatures.is_empty());
    assert!(a
        .signatures
        .iter()
        .all(|s| s.key.kernels_only && s.key.bytes == 0));
    let mut c = tp2dp2();
    c.seed = 2;
    let same = exports_of(&c, "b");
    let mut c = tp2dp2();
    c.variation = Variation {
        op_bandwidth: Some(("AllReduce".into(), 0.5)),
        ..Variation::default()
    };
    let slow = exports_of(&c, "slow");
    for method in TESTS {
        // Against a run with logs (the same run), both compared kernel by kernel.
        let d = compare(base(), &a, method);
        assert!(
            d.summary.contains("The new run has no NCCL log"),
            "{}",
            d.summary
        );
        assert!(d.common.comparable, "{}", listed(&d));
        assert!(d.signatures.iter().all(|s| s.key.kernels_only));
        assert!(d.signatures.iter().all(|s| s.presence == Presence::Both));
        assert!(d.changes.is_empty(), "{method:?}: {}", listed(&d));
        let d = compare(base(), &slow, method);
        assert_eq!(
            d.changes[0].kind,
            ChangeKind::Time,
            "{method:?}: {}",
            listed(&d)
        );
        assert_eq!(d.changes[0].signatures[0].op, "AllReduce", "{}", listed(&d));
    }
    for method in TESTS {
        let d = compare(&a, &same, method);
        assert!(d.common.comparable, "{}", listed(&d));
        assert!(d.signatures.iter().all(|s| s.presence == Presence::Both));
        assert!(d.changes.is_empty(), "{method:?}: {}", listed(&d));
        assert!(!d.summary.contains("No kernel times"), "{}", d.summary);
        let d = compare(&a, &slow, method);
        let first = &d.changes[0];
        assert_eq!(first.kind, ChangeKind::Time, "{method:?}: {}", listed(&d));
        assert_eq!(first.signatures[0].op, "AllReduce", "{}", listed(&d));
        assert!(first.what.contains("size unknown"), "{}", first.what);
    }
}

/// Two real Nsight Systems exports of one job before and after a change (no NCCL log): their
/// NCCL kernels compared by name, not "nothing in common".
#[test]
fn real_exports_before_and_after_compare_by_kernel() {
    let Some(dir) = testkit::fixtures::dir("nsys") else {
        return;
    };
    let load = |name: &str| {
        let (session, _) = testkit::sessions::load_paths(&[dir.join(name)]);
        let analysis = analyse(&session, &UserSizes::default());
        diff::profile(&session, &analysis, name)
    };
    let before = load("GindaChen-nsys-ai_mfu_2gpu_before.sqlite");
    let after = load("GindaChen-nsys-ai_mfu_2gpu_after.sqlite");
    for p in [&before, &after] {
        assert_eq!(p.size.ranks, 2, "{}", p.label);
        assert!(p.size.timed_operations > 0, "{}", p.label);
    }
    let d = compare(&before, &after, Test::Bootstrap);
    assert!(d.common.comparable, "{}", listed(&d));
    let send_recv = d
        .signatures
        .iter()
        .find(|s| s.key.op == "SendRecv")
        .unwrap_or_else(|| panic!("{}", listed(&d)));
    assert_eq!(send_recv.presence, Presence::Both);
    assert!(send_recv.base.timed > 0 && send_recv.new.timed > 0);
    assert!(send_recv.time_ratio.is_some());
}

/// `ncclscope diff BASE NEW --json FILE` on two generated runs written to disk: the contract's
/// shape, the change first, and exit status 0.
#[test]
fn the_command_writes_the_contracts_json() {
    let dir = testkit::scratch_dir("diff_command");
    let (base_dir, new_dir) = (dir.join("base"), dir.join("new"));
    synth::write_run(&synth::generate(&tp2dp2()), &base_dir).unwrap();
    let mut c = tp2dp2();
    c.variation.op_bandwidth = Some(("AllReduce".into(), 0.5));
    synth::write_run(&synth::generate(&c), &new_dir).unwrap();
    let out = dir.join("diff.json");
    let code = ncclscope_cli::run([
        OsStr::new("ncclscope"),
        OsStr::new("diff"),
        OsStr::new("--json"),
        out.as_os_str(),
        base_dir.as_os_str(),
        new_dir.as_os_str(),
    ]);
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let d = &v["diff"];
    assert_eq!(d["base"]["world_size"], 4);
    assert_eq!(d["new"]["label"], new_dir.display().to_string());
    assert!(d["steps"].is_object());
    let sigs = d["signatures"].as_array().unwrap();
    assert!(!sigs.is_empty());
    for s in sigs {
        for field in [
            "parallelism",
            "op",
            "bytes",
            "dtype",
            "time_ratio",
            "significant",
        ] {
            assert!(s.get(field).is_some(), "{field} in {s}");
        }
        for side in ["base", "new"] {
            for field in ["count", "median_ns", "p95_ns", "bus_bw_gbps"] {
                assert!(s[side].get(field).is_some(), "{side}.{field} in {s}");
            }
        }
    }
    assert_eq!(sigs[0]["op"], "AllReduce");
    assert_eq!(sigs[0]["significant"], true);
    assert!(sigs[0]["time_ratio"].as_f64().unwrap() > 1.5);
    // Largest impact first.
    let impacts: Vec<f64> = sigs
        .iter()
        .map(|s| s["impact_ns"].as_f64().unwrap().abs())
        .collect();
    assert!(impacts.windows(2).all(|w| w[0] >= w[1]));
    assert_eq!(d["changes"][0]["kind"], "time");
    assert_eq!(d["test"]["method"], "bootstrap");

    // One run unreadable: the other is summarised, the failure named, exit status 2.
    let junk = dir.join("junk");
    std::fs::create_dir_all(&junk).unwrap();
    std::fs::write(junk.join("notes.txt"), "no NCCL here\n").unwrap();
    let code = ncclscope_cli::run([
        OsStr::new("ncclscope"),
        OsStr::new("diff"),
        OsStr::new("--json"),
        out.as_os_str(),
        base_dir.as_os_str(),
        junk.as_os_str(),
    ]);
    assert_eq!(code, std::process::ExitCode::from(2));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let d = &v["diff"];
    assert_eq!(d["base"]["world_size"], 4);
    assert!(d["base"]["error"].is_null());
    assert!(d["new"]["error"]
        .as_str()
        .unwrap()
        .contains("neither an NCCL debug log"));
    assert!(d["summary"].as_str().unwrap().contains(&format!(
        "the new run ({}) could not be read",
        junk.display()
    )));
    assert_eq!(d["signatures"].as_array().unwrap().len(), 0);
    // A bad option is an unusable argument.
    let code = ncclscope_cli::run([
        OsStr::new("ncclscope"),
        OsStr::new("diff"),
        OsStr::new("--test"),
        OsStr::new("t-test"),
        base_dir.as_os_str(),
        new_dir.as_os_str(),
    ]);
    assert_eq!(code, std::process::ExitCode::from(2));
}
