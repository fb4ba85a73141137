//! Beyond one machine (docs/SCALE.md): the generator's 1024-rank run analysed as 128 independent
//! per-node jobs, each writing Parquet, then one cross-rank query — the slowest rank of every
//! collective instance — on DuckDB and on Dask's distributed scheduler (a local cluster of two
//! workers). Both engines agree, and each answer is right against the generator's true kernel
//! start times.

use ncclscope_tests::scratch_dir;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The Python that has DuckDB and Dask (`scripts/setup` makes `.venv`).
fn python() -> PathBuf {
    let p = std::env::var_os("NCCLSCOPE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python"))
        });
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup (it installs DuckDB and Dask into .venv)",
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

#[test]
fn a_1024_rank_run_as_per_node_jobs_queried_on_duckdb_and_dask() {
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
    let out = dir.join("parquet");
    std::fs::create_dir_all(&out).unwrap();
    for (host, files) in &per_node {
        let parquet = out.join(format!("{host}.parquet"));
        let mut args: Vec<String> = vec![
            "ncclscope".into(),
            "analyze".into(),
            "--parquet".into(),
            parquet.display().to_string(),
        ];
        args.extend(files.iter().map(|f| f.display().to_string()));
        assert_eq!(ncclscope_cli::run(args), ExitCode::SUCCESS, "{host}");
    }

    let pattern = format!("{}/*.parquet", out.display());
    let duck = query("duckdb", &pattern);
    let dask = query("dask", &pattern);
    assert_eq!(duck, dask, "DuckDB and Dask give the same answer");

    let starts = true_starts(&run, &truth);
    let instances = true_instances(&truth, &starts);
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
    std::fs::remove_dir_all(&dir).ok();
}
