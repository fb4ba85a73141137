//! Beyond one machine (docs/SCALE.md): the generator's 1024-rank run analysed as 128 independent
//! per-node jobs, each writing Parquet and an aggregate. Then one cross-rank query — the slowest
//! rank of every collective instance — on DuckDB and on Dask's distributed scheduler (a local
//! cluster of two workers): both engines agree, and each answer is right against the generator's
//! true kernel start times. And the 128 aggregates merged into the run's: every rank with its
//! true counts, every communicator with its true members and parallelism, every kernel at its
//! true time.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use testkit::scratch_dir;

/// The Python that has DuckDB and Dask (`scripts/setup --test` makes `.venv`).
fn python() -> PathBuf {
    let p = std::env::var_os("NCCLSCOPE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python"))
        });
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup --test (it installs DuckDB and Dask into .venv)",
        p.display()
    );
    p
}

fn query(engine: &str, pattern: &str) -> Vec<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scale/cross_rank.py");
    let out = Command::new(python())
        .args([script, engine, pattern])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{engine}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .expect("JSON from cross_rank.py")
        .as_array()
        .unwrap()
        .clone()
}

/// The host a generated file belongs to: `nccl_debug_<host>_<pid>.log`, `report_<host>.sqlite`.
fn host_of(name: &str) -> Option<&str> {
    if let Some(rest) = name.strip_prefix("nccl_debug_") {
        return rest.rsplit_once('_').map(|(h, _)| h);
    }
    name.strip_prefix("report_")?.strip_suffix(".sqlite")
}

/// Every kernel's true start (ns since capture start) by (pid, correlation id), read from the
/// reports and corrected with the truth's clock of each report's node.
fn true_starts(run: &Path, truth: &Value) -> HashMap<(u64, u64), f64> {
    let mut out = HashMap::new();
    for c in truth["clocks"].as_array().unwrap() {
        let host = c["host"].as_str().unwrap();
        let (off, drift) = (
            c["offset_ns"].as_f64().unwrap(),
            c["drift_ppm"].as_f64().unwrap(),
        );
        let db = rusqlite::Connection::open(run.join(format!("report_{host}.sqlite"))).unwrap();
        let mut stmt = db
            .prepare("SELECT (globalPid >> 24) & 16777215, correlationId, start FROM CUPTI_ACTIVITY_KIND_KERNEL")
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .unwrap();
        for row in rows {
            let (pid, corr, start) = row.unwrap();
            let t = (start as f64 - off) / (1.0 + drift * 1e-6);
            assert!(
                out.insert((pid as u64, corr as u64), t).is_none(),
                "pid {pid} on two nodes"
            );
        }
    }
    out
}

/// (comm id, opCount) → the members' (global rank, true start), from the truth's kernel map.
fn true_instances(
    truth: &Value,
    starts: &HashMap<(u64, u64), f64>,
) -> BTreeMap<(String, u64), Vec<(u64, f64)>> {
    let rank_of_pid: HashMap<u64, u64> = truth["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["pid"].as_u64().unwrap(),
                r["global_rank"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut comm_of: HashMap<(u64, &str), &str> = HashMap::new();
    for c in truth["communicators"].as_array().unwrap() {
        for (rank, ptr) in c["global_ranks"]
            .as_array()
            .unwrap()
            .iter()
            .zip(c["pointers"].as_array().unwrap())
        {
            let pid = rank_of_pid
                .iter()
                .find(|(_, r)| *r == &rank.as_u64().unwrap())
                .map(|(p, _)| *p)
                .unwrap();
            comm_of.insert((pid, ptr.as_str().unwrap()), c["id"].as_str().unwrap());
        }
    }
    let mut out: BTreeMap<(String, u64), Vec<(u64, f64)>> = BTreeMap::new();
    for k in truth["kernels"].as_array().unwrap() {
        let Some(op) = k["log_op"].as_object() else {
            continue;
        };
        let pid = k["pid"].as_u64().unwrap();
        let Some(comm) = comm_of.get(&(pid, op["comm"].as_str().unwrap())) else {
            continue;
        };
        let Some(&t) = starts.get(&(pid, k["correlation_id"].as_u64().unwrap())) else {
            continue;
        };
        out.entry((comm.to_string(), op["op_count"].as_u64().unwrap()))
            .or_default()
            .push((rank_of_pid[&pid], t));
    }
    out
}

/// The huge-1024 run and its 128 per-node jobs' outputs, made once for the tests that read them.
struct Jobs {
    dir: PathBuf,
    run: PathBuf,
    out: PathBuf,
    truth: Value,
}

/// Tests still to read [`jobs`]; the last one removes the files.
static READERS: AtomicUsize = AtomicUsize::new(2);

fn jobs() -> &'static Jobs {
    static JOBS: OnceLock<Jobs> = OnceLock::new();
    JOBS.get_or_init(|| {
        let dir = scratch_dir("scale-1024");
        let run = dir.join("run");
        let preset = synth::preset("huge-1024").unwrap();
        synth::write_streaming(&preset.config, Some(preset.name), &run).unwrap();
        let truth: Value =
            serde_json::from_slice(&std::fs::read(run.join("truth.json")).unwrap()).unwrap();

        // One job per node, as a Slurm job array would run them.
        let mut per_node: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for e in std::fs::read_dir(&run).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if let Some(host) = host_of(&name) {
                per_node.entry(host.to_string()).or_default().push(path);
            }
        }
        assert_eq!(per_node.len(), 128, "1024 ranks on 128 nodes");
        let out = dir.join("out");
        std::fs::create_dir_all(&out).unwrap();
        for (host, files) in &per_node {
            let mut args: Vec<String> = vec![
                "ncclscope".into(),
                "analyze".into(),
                "--parquet".into(),
                out.join(format!("{host}.parquet")).display().to_string(),
                "--aggregate".into(),
                out.join(format!("{host}.agg")).display().to_string(),
            ];
            args.extend(files.iter().map(|f| f.display().to_string()));
            assert_eq!(ncclscope_cli::run(args), ExitCode::SUCCESS, "{host}");
        }
        Jobs {
            dir,
            run,
            out,
            truth,
        }
    })
}

fn done_reading() {
    if READERS.fetch_sub(1, Ordering::SeqCst) == 1 {
        std::fs::remove_dir_all(&jobs().dir).ok();
    }
}

#[test]
fn a_1024_rank_run_as_per_node_jobs_queried_on_duckdb_and_dask() {
    let Jobs {
        run, out, truth, ..
    } = jobs();
    let pattern = format!("{}/*.parquet", out.display());
    let duck = query("duckdb", &pattern);
    let dask = query("dask", &pattern);
    assert_eq!(duck, dask, "DuckDB and Dask give the same answer");

    let starts = true_starts(run, truth);
    let instances = true_instances(truth, &starts);
    assert!(duck.len() >= 1000, "only {} instances", duck.len());
    for row in &duck {
        let key = (
            row["comm_id"].as_str().unwrap().to_string(),
            row["op_count"].as_u64().unwrap(),
        );
        let members = instances
            .get(&key)
            .unwrap_or_else(|| panic!("{key:?} is not a true instance"));
        assert_eq!(
            row["members"].as_u64(),
            Some(members.len() as u64),
            "{key:?}"
        );
        let last = members.iter().map(|m| m.1).fold(f64::MIN, f64::max);
        let chosen = row["slowest_rank"].as_u64().unwrap();
        let t = members.iter().find(|m| m.0 == chosen).unwrap().1;
        // Kernel ends of one instance jitter by ±0.5 µs: two arrivals closer than that can swap.
        assert!(
            last - t <= 1_000.0,
            "{key:?}: rank {chosen} arrived {} ns before the last",
            last - t
        );
    }
    done_reading();
}

/// The 128 per-node aggregates merged by `ncclscope aggregate merge` (from the jobs' folder,
/// whose Parquet and JSON files it skips): the run aggregate the page opens.
#[test]
fn a_1024_rank_run_as_per_node_aggregates_merged_into_the_runs() {
    let Jobs {
        run, out, truth, ..
    } = jobs();
    let merged = out.with_file_name("run.agg");
    let args = [
        "ncclscope",
        "aggregate",
        "merge",
        "--out",
        merged.to_str().unwrap(),
        out.to_str().unwrap(),
    ];
    assert_eq!(ncclscope_cli::run(args), ExitCode::SUCCESS);
    let bytes = std::fs::read(&merged).unwrap();
    let agg = aggregate_file::Aggregate::open("run.agg", &bytes).unwrap();
    let o = &agg.overview;
    assert!(o.notes.is_empty(), "{:?}", o.notes);

    // Every rank, with the truth's counts and bytes per operation type.
    let ranks = truth["ranks"].as_array().unwrap();
    assert_eq!(o.ranks.len(), ranks.len());
    for t in ranks {
        let g = t["global_rank"].as_u64().unwrap() as u32;
        let r = o.rank(g).unwrap_or_else(|| panic!("rank {g} missing"));
        assert_eq!(r.host, t["host"].as_str().unwrap(), "rank {g}");
        assert_eq!(u64::from(r.pid), t["pid"].as_u64().unwrap(), "rank {g}");
        assert!(r.rank_from_init, "rank {g}");
        assert_eq!(Some(r.kernels), t["kernels"].as_u64(), "rank {g}");
        assert_eq!(Some(r.matched), t["matched_ops"].as_u64(), "rank {g}");
        for (op, n) in t["ops_by_type"].as_object().unwrap() {
            let ours = r.ops.iter().find(|x| &x.op == op);
            assert_eq!(
                ours.map_or(0, |x| x.count),
                n.as_u64().unwrap(),
                "rank {g} {op}"
            );
            assert_eq!(
                ours.map_or(0, |x| x.bytes),
                t["bytes_by_type"][op].as_u64().unwrap(),
                "rank {g} {op} bytes"
            );
        }
    }

    // Every communicator, with its members and its parallelism: a node alone sees one member of
    // each DP and PP group; the merge labels them as the whole run shows them.
    let comms = truth["communicators"].as_array().unwrap();
    assert_eq!(o.comms.len(), comms.len());
    for t in comms {
        let id = t["id"].as_str().unwrap();
        let c = o
            .comms
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id}"));
        let mut members: Vec<u32> = t["global_ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_u64().unwrap() as u32)
            .collect();
        members.sort_unstable();
        assert_eq!(c.global_ranks, members, "{id}");
        assert_eq!(c.parallelism, t["parallelism"].as_str().unwrap(), "{id}");
    }
    let sizes = o.layout.sizes.expect("a layout");
    let l = &truth["layout"];
    assert_eq!(
        [sizes.tp, sizes.cp, sizes.ep, sizes.dp, sizes.pp].map(u64::from),
        ["tp", "cp", "ep", "dp", "pp"].map(|k| l[k].as_u64().unwrap())
    );

    // The nodes' clocks tied by the merge: every kernel of every rank at its true start (the
    // reference node's clock is the truth's), within the kernels' end jitter and the fit.
    let starts = true_starts(run, truth);
    let mut worst = 0f64;
    for r in &o.ranks {
        let detail = agg.rank(r.global_rank).unwrap();
        assert_eq!(detail.kernels.len() as u64, r.kernels);
        for k in &detail.kernels {
            let t = starts[&(u64::from(r.pid), k.correlation_id)];
            worst = worst.max((k.start_ns as f64 - t).abs());
        }
    }
    assert!(
        worst < 5_000.0,
        "a kernel {worst:.0} ns from its true start"
    );

    // Compact: smaller than the Parquet files of the same kernels.
    let size = |ext: &str| -> u64 {
        std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum()
    };
    let parquet = size("parquet");
    eprintln!(
        "huge-1024: run aggregate {} bytes (overview {} bytes), per-node aggregates {} bytes, Parquet {parquet} bytes; worst kernel time {worst:.0} ns",
        bytes.len(),
        agg.header.overview.len,
        size("agg")
    );
    assert!((bytes.len() as u64) < parquet);
    done_reading();
}
