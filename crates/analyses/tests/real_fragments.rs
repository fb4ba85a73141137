//! Every real fixture (`../shared/fixtures/real/nccl`, read in place) gives the finding a
//! maintainer would give from the excerpt alone. One table, file → expected findings: each row
//! names the issue the excerpt came from (SOURCES.md) and what its thread says, and lists the
//! findings of warning severity or more exactly (kind, severity, ranks, opCount, communicator,
//! peer ranks), plus the info findings it must at least hold. A fixture not in the table is an
//! excerpt of a healthy run: nothing above info, no mismatch.
#![cfg(not(target_arch = "wasm32"))]

use analyses::diagnosis::{diagnose, Context, Diagnosis, ErrorClass, Finding, Kind, Severity};
use ingest_nccl::{parse_bytes, ParsedLog};

/// A finding the excerpt must give.
struct Want {
    kind: Kind,
    severity: Severity,
    ranks: &'static [u32],
    op_count: Option<&'static str>,
    communicator: Option<&'static str>,
    /// A phrase of the message (the process, the class, the peer, ...).
    says: &'static str,
    class: Option<ErrorClass>,
    peer_ranks: &'static [u32],
}

const fn want(kind: Kind, severity: Severity, says: &'static str) -> Want {
    Want {
        kind,
        severity,
        ranks: &[],
        op_count: None,
        communicator: None,
        says,
        class: None,
        peer_ranks: &[],
    }
}

struct Row {
    /// The fixture's name starts with this.
    file: &'static str,
    /// The issue (SOURCES.md) and, in a sentence, what its thread found.
    issue: &'static str,
    /// Findings of warning severity or more: exactly these.
    serious: Vec<Want>,
    /// Info findings it must hold (more may come).
    info: Vec<Want>,
    /// How the first error was told, when there are errors.
    first_error: Option<&'static str>,
}

/// The table of the module doc, one row per fixture. Kept whole (about 170 lines): each row
/// is read against its issue thread, and a table in pieces would hide which fixtures it covers.
fn table() -> Vec<Row> {
    use Kind::*;
    use Severity::*;
    vec![
        Row {
            file: "NVIDIA-nccl_issue147_",
            issue: "NVIDIA/nccl#147, random hang after several DDP broadcasts: rank 0 broadcasts \
                    the fp16 parameters while ranks 1, 5 and 7 broadcast 53 int64 buffers at the \
                    same opCount 0 (grouped by size: no init lines; one line glued to another \
                    writer's, one without its header)",
            serious: vec![Want {
                ranks: &[0],
                op_count: Some("0"),
                ..want(
                    Mismatch,
                    Critical,
                    "rank 0 calls Broadcast (count 25503912, float16",
                )
            }],
            info: vec![want(
                Behind,
                Info,
                "mismatched collective on this communicator explains it",
            )],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue214_",
            issue:
                "NVIDIA/nccl#214, GPU Direct RDMA error: four ranks of node 1 report NCCL's own \
                    mismatch check naming ranks 9, 11, 13 and 15; their ranks are not in the \
                    excerpt (no init line of theirs) and the warnings carry no time",
            serious: vec![
                Want {
                    peer_ranks: &[9],
                    class: Some(ErrorClass::Mismatch),
                    ..want(Error, Critical, "node-8x-v100-nvlink-1:39717")
                },
                Want {
                    peer_ranks: &[11],
                    class: Some(ErrorClass::Mismatch),
                    ..want(Error, Critical, "node-8x-v100-nvlink-1:39719")
                },
                Want {
                    peer_ranks: &[13],
                    class: Some(ErrorClass::Mismatch),
                    ..want(Error, Critical, "node-8x-v100-nvlink-1:39721")
                },
                Want {
                    peer_ranks: &[15],
                    class: Some(ErrorClass::Mismatch),
                    ..want(Error, Critical, "node-8x-v100-nvlink-1:39727")
                },
            ],
            info: vec![want(Missing, Info, "14 of the 16 members")],
            first_error: Some("cannot be told"),
        },
        Row {
            file: "NVIDIA-nccl_issue1593_",
            issue:
                "NVIDIA/nccl#1593, deadlock in AllToAllv: the thread traces it to the pairing of \
                    sends and receives; the excerpt shows one group of calls per rank at opCount \
                    0 and no two lines that disagree, so nothing can be claimed",
            serious: vec![],
            info: vec![],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue584_",
            issue:
                "NVIDIA/nccl#584, send/recv hang on two communicators: only rank 1's lines were \
                    posted, so the peer of each communicator appears in no log",
            serious: vec![],
            info: vec![
                want(Missing, Info, "1 of the 2 members of communicator"),
                want(Missing, Info, "1 of the 2 members of communicator"),
            ],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue629_",
            issue:
                "NVIDIA/nccl#629, illegal memory access: the excerpt holds set-up lines of 8 of \
                    the 16 ranks (single-process, multi-GPU) and not the error",
            serious: vec![],
            info: vec![want(
                Missing,
                Info,
                "(ranks 0, 1, 3, 6, 7, 10, 11, 13 in the communicator)",
            )],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue1814_",
            issue:
                "NVIDIA/nccl#1814, NET/IB completion error: the excerpt holds 4 of the 64 ranks' \
                    Init COMPLETE lines and not the error",
            serious: vec![],
            info: vec![Want {
                communicator: Some("0x5ae77eb5ea4ec1ee"),
                ..want(Missing, Info, "60 of the 64 members")
            }],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue1038_",
            issue: "NVIDIA/nccl#1038, re-initialising with a used unique id: ncclCommInitRank \
                    prints Init START and never completes",
            serious: vec![Want {
                communicator: Some("0xbd10cc2bcb56e132"),
                ..want(Behind, Warning, "Process host-2:38610 printed Init START")
            }],
            info: vec![],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue1267_",
            issue: "NVIDIA/nccl#1267, a socket of address family 0 at set-up: the one rank's \
                    Init START has no Init COMPLETE in the log",
            serious: vec![Want {
                communicator: Some("0x7ef9513a104d9d97"),
                ..want(Behind, Warning, "no Init COMPLETE")
            }],
            info: vec![],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue634_",
            issue:
                "NVIDIA/nccl#634, hang beyond 8 GPUs: the excerpt is ring and tree set-up only; \
                    the hang is not in it",
            serious: vec![],
            info: vec![],
            first_error: None,
        },
        Row {
            file: "Project-HAMi-HAMi-core_issue261_",
            issue: "Project-HAMi/HAMi-core#261, vLLM TP hang: trace-level set-up lines only",
            serious: vec![],
            info: vec![],
            first_error: None,
        },
        Row {
            file: "vllm-project-vllm_issue6201_",
            issue: "vllm-project/vllm#6201, TP=2 stuck: channel set-up lines only",
            serious: vec![],
            info: vec![],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue1238_",
            issue: "NVIDIA/nccl#1238, nccl-tests AllReduce whose opCount stays 0: the same line \
                    four times is a repeat, not a mismatch",
            serious: vec![],
            info: vec![],
            first_error: None,
        },
        Row {
            file: "NVIDIA-nccl_issue262_",
            issue: "NVIDIA/nccl#262, GCP V100 rings: `Failed to open libibverbs` is NCCL falling \
                    back to sockets, not a failure",
            serious: vec![],
            info: vec![want(Error, Info, "falls back from an optional library")],
            first_error: None,
        },
    ]
}

fn diagnosis_of(name: &str, bytes: &[u8]) -> (ParsedLog, Diagnosis) {
    let log = parse_bytes(name, 0, bytes);
    let d = diagnose(&[&log], Context::default());
    (log, d)
}

fn matches(f: &Finding, w: &Want) -> bool {
    f.kind == w.kind
        && f.severity == w.severity
        && (w.ranks.is_empty() || f.ranks == w.ranks)
        && (w.op_count.is_none() || f.op_count.as_deref() == w.op_count)
        && (w.communicator.is_none() || f.communicator.as_deref() == w.communicator)
        && f.message.contains(w.says)
        && (w.class.is_none() || f.class == w.class)
        && f.peer_ranks == w.peer_ranks
}

/// Each wanted finding matched by its own finding.
fn all_matched(found: &[&Finding], wants: &[Want]) -> Result<(), String> {
    let mut used = vec![false; found.len()];
    for w in wants {
        let hit = (0..found.len()).find(|&i| !used[i] && matches(found[i], w));
        match hit {
            Some(i) => used[i] = true,
            None => {
                return Err(format!(
                    "no finding {:?}/{:?} saying {:?}",
                    w.kind, w.severity, w.says
                ))
            }
        }
    }
    Ok(())
}

fn show(d: &Diagnosis) -> String {
    d.findings
        .iter()
        .map(|f| {
            format!(
                "  {:?}/{:?} ranks {:?} op {:?} comm {:?} peers {:?}: {}\n",
                f.severity, f.kind, f.ranks, f.op_count, f.communicator, f.peer_ranks, f.message
            )
        })
        .collect()
}

#[test]
fn every_fragment_gives_the_maintainers_finding() {
    let files = testkit::fixtures::files("nccl", "log");
    if files.is_empty() {
        return;
    }
    let table = table();
    let mut rows_seen = 0;
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).expect("read fixture");
        let (_, d) = diagnosis_of(&name, &bytes);
        let why = |what: String| format!("{name}: {what}\n{}", show(&d));
        let serious: Vec<&Finding> = d
            .findings
            .iter()
            .filter(|f| f.severity > Severity::Info)
            .collect();
        let info: Vec<&Finding> = d
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Info)
            .collect();
        // Every finding's evidence is a line of this file.
        let lines = String::from_utf8_lossy(&bytes).lines().count() as u64;
        for f in &d.findings {
            assert!(
                f.evidence
                    .iter()
                    .all(|e| e.path == name && e.line >= 1 && e.line <= lines),
                "{}",
                why("evidence outside the file".into())
            );
        }
        let Some(row) = table.iter().find(|r| name.starts_with(r.file)) else {
            assert!(
                serious.is_empty(),
                "{}",
                why("a healthy excerpt holds nothing above info".into())
            );
            assert!(
                d.findings.iter().all(|f| f.kind != Kind::Mismatch),
                "{}",
                why("no mismatch".into())
            );
            continue;
        };
        rows_seen += 1;
        let context = format!("{} — {}", row.file, row.issue);
        assert_eq!(
            serious.len(),
            row.serious.len(),
            "{}",
            why(format!("{context}: findings above info"))
        );
        all_matched(&serious, &row.serious)
            .unwrap_or_else(|e| panic!("{}", why(format!("{context}: {e}"))));
        all_matched(&info, &row.info)
            .unwrap_or_else(|e| panic!("{}", why(format!("{context}: {e}"))));
        match (row.first_error, &d.first_error) {
            (Some(how), Some(f)) => assert!(
                f.how.contains(how),
                "{}",
                why(format!("first error: {f:?}"))
            ),
            (None, first) => assert!(
                first.as_ref().is_none_or(
                    |f| f.finding.is_none() || serious.iter().any(|s| s.kind == Kind::Error)
                ),
                "{}",
                why("no first error".into())
            ),
            (Some(_), None) => panic!("{}", why("a first error was expected".into())),
        }
    }
    assert_eq!(rows_seen, table.len(), "every row's fixture is present");
}

/// The page shows and shares the findings as they are: they survive JSON both ways, and the
/// contract's fields are there with their names and shapes.
#[test]
fn findings_are_the_contracts_json() {
    let Some(path) = testkit::fixtures::files("nccl", "log")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("issue147_"))
    else {
        return;
    };
    let bytes = std::fs::read(&path).expect("read fixture");
    let (_, d) = diagnosis_of("147.log", &bytes);
    let json = serde_json::to_value(&d).expect("serialises");
    let back: Diagnosis = serde_json::from_value(json.clone()).expect("deserialises");
    assert_eq!(back, d);
    let f = &json["findings"][0];
    assert_eq!(f["kind"], "mismatch");
    assert_eq!(f["severity"], "critical");
    assert_eq!(f["op_count"], "0");
    assert_eq!(f["ranks"], serde_json::json!([0]));
    assert_eq!(
        f["processes"],
        serde_json::json!([{"host": "learnfair062", "pid": 32615}])
    );
    assert!(f["communicator"].is_string());
    assert!(f["message"].as_str().is_some_and(|m| m.ends_with('.')));
    assert_eq!(
        f["evidence"][0],
        serde_json::json!({"path": "147.log", "line": 3})
    );
    // Where every member stopped, with the evidence of its last line.
    let table = &json["stopped"][0];
    let rank1 = table["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["rank"] == 1)
        .expect("rank 1 in the table");
    assert_eq!(rank1["last"]["op_count"], "1");
    assert_eq!(rank1["last"]["op"], "Broadcast");
    assert_eq!(rank1["last"]["stream"], "0x55d5ffb73110");
    assert_eq!(rank1["last"]["evidence"]["line"], 7);
}
