//! Each logical communicator's set-up (channels, tree channels, transports, node layout) against
//! what the generator's logs print, counted from their text.

use analyses::comm_setups;
use load::{LogLoader, Session};
use pipeline::{analyse, UserSizes};
use std::collections::{BTreeMap, BTreeSet};

/// The demo run (2 nodes × 4 GPUs, TP2 PP2 DP2): communicators inside a node (P2P) and across
/// nodes (the network).
#[test]
fn setups_match_the_logs_text() {
    let run = synth::generate(&synth::preset("demo").expect("preset").config);
    let mut session = Session::default();
    let mut text = String::new();
    for (name, bytes) in &run.files {
        if !name.ends_with(".log") {
            continue;
        }
        let mut loader = LogLoader::new(name, session.next_file_index());
        loader.feed(bytes);
        session.add_log(loader.finish(bytes.len() as u64));
        text.push_str(&String::from_utf8_lossy(bytes));
    }
    let analysis = analyse(&session, &UserSizes::default());
    let setups = comm_setups(&session, &analysis);
    assert_eq!(setups.len(), analysis.communicators.comms.len());

    // From the text: every connection line's transport without its device numbers, and every
    // channel count and tree line.
    let mut transports: BTreeMap<String, usize> = BTreeMap::new();
    let mut counts: BTreeSet<u32> = BTreeSet::new();
    for line in text.lines() {
        let Some(body) = line.split(" NCCL INFO ").nth(1) else {
            continue;
        };
        if let Some(via) = body.split(" via ").nth(1) {
            if body.starts_with("Channel ") {
                let kind: Vec<&str> = via
                    .split('/')
                    .filter(|p| !p.chars().all(|c| c.is_ascii_digit()))
                    .collect();
                *transports.entry(kind.join("/")).or_insert(0) += 1;
            }
        } else if let Some(rest) = body.strip_prefix("Channel ") {
            if let Some(n) = rest
                .split(" : ")
                .next()
                .and_then(|h| h.split('/').nth(1))
                .and_then(|n| n.parse().ok())
            {
                counts.insert(n);
            }
        }
    }
    assert!(transports.len() >= 2, "P2P and the network: {transports:?}");

    // Every connection belongs to a communicator whose init completed (the generator prints
    // no others), so the transports add up to the text's.
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    for s in &setups {
        for (t, n) in &s.transports {
            *got.entry(t.clone()).or_insert(0) += n;
        }
    }
    assert_eq!(got, transports);
    for s in &setups {
        let c = &analysis.communicators.comms[s.comm];
        if c.size < 2 {
            continue;
        }
        let n = s
            .channels
            .expect("a communicator of 2+ ranks printed its channels");
        assert!(counts.contains(&n), "{}: {n} channels", c.id);
        assert_eq!(s.tree_channels, Some(n), "{}: one tree per channel", c.id);
        // A communicator that spans both nodes connects through the network.
        let hosts: BTreeSet<&str> = c.members.iter().map(|m| m.0.host.as_str()).collect();
        let net = s.transports.iter().any(|(t, _)| t.starts_with("NET/"));
        assert_eq!(net, hosts.len() > 1, "{}: {:?}", c.id, s.transports);
    }
}
