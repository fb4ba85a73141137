//! Errors across ranks: classified, a peer named by address resolved to its rank, the first in
//! time marked by the stamps, by synchronised clocks when they are given, and said to be
//! unknowable when stamps are missing or too coarse to order.

use analyses::diagnosis::{diagnose, Context, Diagnosis, ErrorClass, Finding, Kind, Severity};
use enrich::{ClockSync, RankClock};
use ingest_nccl::{parse_bytes, ParsedLog};
use std::collections::BTreeMap;

/// Two ranks on two hosts, each with its bootstrap address and set-up; `warn` adds (stamp,
/// rank, text) warnings, `stamp` prints a stamp before every line (`None`: no stamps).
fn logs(warns: &[(f64, u32, &str)], stamp: fn(f64) -> Option<String>) -> Vec<(String, Vec<u8>)> {
    (0..2u32)
        .map(|r| {
            let who = format!("node{}:{}:{}", r + 1, 11 * (r + 1), 11 * (r + 1));
            let at = |t: f64| stamp(t).map(|s| format!("{s} ")).unwrap_or_default();
            let mut text = String::new();
            text += &format!("{}{who} [0] NCCL INFO Bootstrap : Using eth0:10.0.0.{}<0>\n", at(990.0), r + 1);
            text += &format!("{}{who} [0] NCCL INFO Using network IB\n", at(990.5));
            text += &format!(
                "{}{who} [0] NCCL INFO comm 0x{:x} rank {r} nranks 2 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE\n",
                at(991.0),
                0x5500 + r
            );
            for (t, wr, msg) in warns.iter().filter(|w| w.1 == r) {
                text += &format!("{}{who} [0] transport/net_ib.cc:1295 NCCL WARN {msg}\n", at(*t));
                text += &format!("{}{who} [0] NCCL INFO transport/net.cc:1302 -> 6\n", at(*t + 0.000_001));
                let _ = wr;
            }
            (format!("rank{r}.log"), text.into_bytes())
        })
        .collect()
}

fn epoch(t: f64) -> Option<String> {
    Some(format!("{:.6}", 1_732_150_000.0 + t))
}

fn diagnose_with(files: &[(String, Vec<u8>)], clocks: Option<&ClockSync>) -> Diagnosis {
    let parsed: Vec<ParsedLog> = files
        .iter()
        .enumerate()
        .map(|(i, (n, b))| parse_bytes(n, i as u32, b))
        .collect();
    let refs: Vec<&ParsedLog> = parsed.iter().collect();
    diagnose(
        &refs,
        Context {
            communicators: None,
            clocks,
        },
    )
}

fn error_of(d: &Diagnosis, rank: u32) -> &Finding {
    d.findings
        .iter()
        .find(|f| f.kind == Kind::Error && f.ranks == [rank])
        .unwrap_or_else(|| panic!("no error of rank {rank}: {:#?}", d.findings))
}

const NET: &str = "NET/IB : Got completion from peer 10.0.0.2<1234> with status=12 opcode=0 len=0 vendor err 129 (Recv)";
const CUDA: &str = "Cuda failure 'an illegal memory access was encountered'";

#[test]
fn classes_peers_and_the_first_error_by_stamps() {
    let d = diagnose_with(&logs(&[(1000.5, 0, NET), (1000.2, 1, CUDA)], epoch), None);
    let net = error_of(&d, 0);
    assert_eq!(net.class, Some(ErrorClass::Network));
    assert_eq!(net.severity, Severity::Critical);
    // 10.0.0.2 is rank 1's bootstrap address.
    assert_eq!(net.peer_ranks, [1]);
    assert!(
        net.message.contains("the peer 10.0.0.2 is rank 1"),
        "{}",
        net.message
    );
    assert!(
        net.message.contains("and 1 more line"),
        "the failed call is its trail: {}",
        net.message
    );
    let cuda = error_of(&d, 1);
    assert_eq!(cuda.class, Some(ErrorClass::Cuda));
    // 1732150000 + 1000.2 s, as the log stamped it.
    assert_eq!(cuda.time.as_deref(), Some("2024-11-21 01:03:20.200000"));
    assert!(cuda.first, "rank 1's error is 0.3 s earlier");
    assert!(!net.first);
    let first = d.first_error.as_ref().expect("told");
    assert!(first.how.contains("log timestamps"), "{}", first.how);
    assert_eq!(d.findings[first.finding.unwrap()].ranks, [1]);
}

#[test]
fn synchronised_clocks_reorder_what_the_stamps_say() {
    // Rank 1's clock is 0.5 s behind rank 0's: its 1000.2 is 1000.7 on rank 0's clock.
    let mut ranks = BTreeMap::new();
    for (r, off) in [(0u32, 0.0), (1, -0.5e9)] {
        ranks.insert(
            r,
            RankClock {
                offset_ns: off,
                drift_ppm: 0.0,
                samples: 20,
            },
        );
    }
    let clocks = ClockSync {
        reference_rank: 0,
        reference_ns: 0,
        ranks,
    };
    let d = diagnose_with(
        &logs(&[(1000.5, 0, NET), (1000.2, 1, CUDA)], epoch),
        Some(&clocks),
    );
    assert!(error_of(&d, 0).first);
    assert!(!error_of(&d, 1).first);
    assert!(d.first_error.as_ref().unwrap().how.contains("synchronised"));
}

#[test]
fn coarse_or_missing_stamps_cannot_tell() {
    // `[%F %T]` stamps: whole seconds; both errors in the same second.
    let seconds: fn(f64) -> Option<String> = |t| {
        let s = t as i64;
        Some(format!("[2024-11-21 00:{:02}:{:02}]", s / 60 % 60, s % 60))
    };
    let d = diagnose_with(&logs(&[(1000.5, 0, NET), (1000.2, 1, CUDA)], seconds), None);
    let first = d.first_error.as_ref().expect("said");
    assert_eq!(first.finding, None, "{first:?}");
    assert!(first.how.contains("cannot be told"), "{}", first.how);
    assert!(d.findings.iter().all(|f| !f.first));
    // A second apart, they order.
    let d = diagnose_with(&logs(&[(1002.5, 0, NET), (1000.2, 1, CUDA)], seconds), None);
    assert!(error_of(&d, 1).first);
    // No stamps at all: two processes cannot be ordered; one process's first error is its first
    // line.
    let d = diagnose_with(
        &logs(&[(1000.5, 0, NET), (1000.2, 1, CUDA)], |_| None),
        None,
    );
    assert!(d
        .first_error
        .as_ref()
        .unwrap()
        .how
        .contains("no timestamps"));
    let d = diagnose_with(
        &logs(&[(1000.5, 0, NET), (1000.6, 0, CUDA)], |_| None),
        None,
    );
    let first = d.first_error.as_ref().unwrap();
    assert!(first.how.contains("only one process"), "{}", first.how);
    assert_eq!(
        d.findings[first.finding.unwrap()].class,
        Some(ErrorClass::Network)
    );
}
