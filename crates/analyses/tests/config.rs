//! Set-up that differs across ranks: NCCL versions, `NCCL_*` settings, the network, and within
//! a communicator the network transport, channel count and size its members print.

use analyses::diagnosis::{diagnose, Context, Diagnosis, Kind, Severity};
use ingest_nccl::{parse_bytes, ParsedLog};

/// Rank r's log: version, settings, network, init and channel lines as NCCL 2.18 prints them.
fn rank_log(
    r: u32,
    version: &str,
    settings: &[&str],
    net: &str,
    channels: u32,
    transport: &str,
) -> String {
    let who = format!("node{}:{}:{}", r / 2 + 1, 100 + r, 100 + r);
    let mut t = format!(
        "{who} [{d}] NCCL INFO NCCL version {version}+cuda12.2\n",
        d = r % 2
    );
    for s in settings {
        t += &format!("{who} [{}] NCCL INFO {s}\n", r % 2);
    }
    t += &format!("{who} [{}] NCCL INFO Using network {net}\n", r % 2);
    for c in 0..channels {
        t += &format!(
            "{who} [{d}] NCCL INFO Channel {c:02}/0 : {r}[{d}] -> {n}[{d}] [send] via {transport}\n",
            d = r % 2,
            n = (r + 1) % 4
        );
    }
    t += &format!("{who} [{}] NCCL INFO {channels} coll channels, 0 nvls channels, {channels} p2p channels, 1 p2p channels per peer\n", r % 2);
    t += &format!(
        "{who} [{d}] NCCL INFO comm 0x{:x} rank {r} nranks 4 cudaDev {d} busId 1000 commId 0xfeed - Init COMPLETE\n",
        0x7700 + r,
        d = r % 2
    );
    t
}

fn diagnose_logs(texts: &[String]) -> Diagnosis {
    let parsed: Vec<ParsedLog> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| parse_bytes(&format!("rank{i}.log"), i as u32, t.as_bytes()))
        .collect();
    let refs: Vec<&ParsedLog> = parsed.iter().collect();
    diagnose(&refs, Context::default())
}

fn config_saying<'a>(d: &'a Diagnosis, what: &str) -> Option<&'a analyses::diagnosis::Finding> {
    d.findings
        .iter()
        .find(|f| f.kind == Kind::Config && f.message.contains(what))
}

#[test]
fn agreeing_ranks_give_no_config_finding() {
    let texts: Vec<String> = (0..4)
        .map(|r| {
            rank_log(
                r,
                "2.18.3",
                &["NCCL_IB_HCA set to mlx5_0"],
                "IB",
                2,
                "NET/IB/0/GDRDMA",
            )
        })
        .collect();
    let d = diagnose_logs(&texts);
    assert!(
        d.findings.iter().all(|f| f.kind != Kind::Config),
        "{:#?}",
        d.findings
    );
}

#[test]
fn the_odd_rank_out_is_named() {
    let ib = ["NCCL_IB_HCA set to mlx5_0"];
    let texts = vec![
        rank_log(0, "2.18.3", &ib, "IB", 2, "NET/IB/0/GDRDMA"),
        rank_log(1, "2.18.3", &ib, "IB", 2, "NET/IB/0/GDRDMA"),
        rank_log(2, "2.18.3", &ib, "IB", 2, "NET/IB/0/GDRDMA"),
        // Rank 3: another version, IB disabled, sockets, fewer channels.
        rank_log(
            3,
            "2.19.3",
            &[
                "NCCL_IB_HCA set to mlx5_0",
                "NCCL_IB_DISABLE set by environment to 1.",
            ],
            "Socket",
            1,
            "NET/Socket/0",
        ),
    ];
    let d = diagnose_logs(&texts);
    let show = format!("{:#?}", d.findings);
    for what in [
        "the NCCL version: 2.18.3+cuda12.2 on ranks 0, 1 and 2 and 2.19.3+cuda12.2 on rank 3",
        "the network NCCL uses: IB on ranks 0, 1 and 2 and Socket on rank 3",
        "the network transport of communicator 0xfeed: NET/IB on ranks 0, 1 and 2 and NET/Socket on rank 3",
        "the channel count of communicator 0xfeed: 2 on ranks 0, 1 and 2 and 1 on rank 3",
    ] {
        let f = config_saying(&d, what).unwrap_or_else(|| panic!("no {what:?}: {show}"));
        assert_eq!(f.ranks, [3], "{what}");
        assert_eq!(f.severity, Severity::Warning, "{what}");
        assert!(!f.evidence.is_empty(), "{what}");
    }
    // Set on one rank, not printed by the others that printed their set-up: worth knowing.
    let f =
        config_saying(&d, "NCCL_IB_DISABLE=1 is set on rank 3").unwrap_or_else(|| panic!("{show}"));
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(f.ranks, [0, 1, 2]);
    assert!(config_saying(&d, "NCCL_IB_HCA").is_none(), "{show}");
}
