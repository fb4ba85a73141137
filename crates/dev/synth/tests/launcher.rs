//! Launcher tags (`RunConfig::launcher`): every line carries the tag, and the logs parse back
//! through `ingest-nccl` to exactly the operations, processes and communicator inits of the
//! same run without a launcher (and to the truth's counts).

use std::collections::BTreeMap;
use synth::{generate, preset, Launcher, RunConfig};

/// Per process (host, pid): operations by type, and the number of Init COMPLETE lines.
type Parsed = BTreeMap<(String, u32), (BTreeMap<String, u64>, usize)>;

fn parse(run: &synth::Run) -> Parsed {
    let mut out: Parsed = BTreeMap::new();
    for (i, (name, bytes)) in run.files.iter().enumerate() {
        let p = ingest_nccl::parse_bytes(name, i as u32, bytes);
        for op in &p.ops {
            let key = (op.process.host.to_string(), op.process.pid);
            *out.entry(key)
                .or_default()
                .0
                .entry(op.op.name().to_string())
                .or_default() += 1;
        }
        for init in &p.inits {
            let key = (init.process.host.to_string(), init.process.pid);
            out.entry(key).or_default().1 += 1;
        }
    }
    out
}

fn config(name: &str, launcher: Launcher) -> RunConfig {
    let mut c = preset(name).unwrap().config;
    c.model.iterations = 2;
    c.launcher = launcher;
    c
}

#[test]
fn every_launcher_parses_back_to_the_same_operations() {
    // demo: one combined, timestamped log with every imperfection; tp2pp2: one file per
    // process with duplicate lines and orphan AllReduce lines.
    for name in ["demo", "tp2pp2"] {
        let plain = generate(&config(name, Launcher::None));
        let want = parse(&plain);
        assert!(!want.is_empty());
        // The truth's counts are what the plain parse finds (so the comparison below is
        // against real numbers, not two equally broken parses).
        for r in &plain.truth.ranks {
            let got = &want[&(r.host.clone(), r.pid)].0;
            for (op, n) in &r.ops_by_type {
                assert_eq!(got.get(op).copied().unwrap_or(0), *n, "{name} {op}");
            }
        }
        for l in [Launcher::Torchrun, Launcher::Srun, Launcher::Mpirun] {
            let run = generate(&config(name, l));
            assert_eq!(run.truth.launcher, l);
            // Every complete line starts with some rank's tag.
            let tags: Vec<String> = run
                .truth
                .ranks
                .iter()
                .map(|r| l.tag(r.global_rank, r.local_rank))
                .collect();
            for (_, bytes) in &run.files {
                let text = String::from_utf8_lossy(bytes);
                for line in text.lines() {
                    assert!(
                        tags.iter().any(|t| line.starts_with(t.as_str())),
                        "{name} {}: untagged line {line}",
                        l.name()
                    );
                }
            }
            assert_eq!(parse(&run), want, "{name} {}", l.name());
        }
    }
}

#[test]
fn launcher_tags_have_the_real_shapes() {
    assert_eq!(Launcher::Torchrun.tag(9, 1), "[default1]:");
    assert_eq!(Launcher::Srun.tag(9, 1), "9: ");
    assert_eq!(Launcher::Mpirun.tag(9, 1), "[1,9]<stdout>:");
    assert_eq!(Launcher::None.tag(9, 1), "");
    for l in Launcher::ALL {
        assert_eq!(Launcher::parse(l.name()), Some(l));
    }
}
