//! Inputs that do not say everything: logs without ring lines, tuning lines naming an algorithm
//! this build does not know, operations it has no name for, logs with no export at all,
//! kernels of zero duration. Each is said in the notes, and the rest stands.

mod support;

use analyses::patterns::{
    comm_matrix, perf_model, periodicity, predicted_matrix, Prepared, StepSource,
};
use load::{LogLoader, Session};
use pipeline::{analyse, UserSizes};

/// Three processes of one host on one communicator (commId 0xfeed), no ring line, each logging
/// an AllReduce of 1000 floats with a tuning line naming `Algo FOO`, an AllToAllPivot of 10
/// floats (RCCL's operation) and a Send of 64 floats to the next rank.
fn three_logs() -> Session {
    let mut session = Session::default();
    for r in 0..3u32 {
        let pid = 10 + r;
        let ptr = 0xa0 + r;
        let head = format!("host:{pid}:{pid} [{r}] NCCL INFO ");
        let peer = (r + 1) % 3;
        let text = format!(
            "{head}comm 0x{ptr:x} rank {r} nranks 3 cudaDev {r} busId {r}8000 commId 0xfeed - Init COMPLETE\n\
             {head}AllReduce: opCount 0 sendbuff 0x10 recvbuff 0x20 count 1000 datatype 7 op 0 root 0 comm 0x{ptr:x} [nranks=3] stream 0x5\n\
             {head}AllReduce: 4000 Bytes -> Algo FOO proto LL channel{{Lo..Hi}}={{0..1}}\n\
             {head}AllToAllPivot: opCount 1 sendbuff 0x10 recvbuff 0x20 count 10 datatype 7 op 0 root 0 comm 0x{ptr:x} [nranks=3] stream 0x5\n\
             {head}Send: opCount 2 sendbuff 0x10 recvbuff 0x0 count 64 datatype 7 op 0 root {peer} comm 0x{ptr:x} [nranks=3] stream 0x5\n"
        );
        let name = format!("rank{r}.log");
        let mut loader = LogLoader::new(&name, session.next_file_index());
        loader.feed(text.as_bytes());
        session.add_log(loader.finish(text.len() as u64));
    }
    session
}

#[test]
fn logs_alone_without_rings_or_known_names_still_give_their_matrix() {
    let session = three_logs();
    let analysis = analyse(&session, &UserSizes::default());
    let prepared = Prepared::of(&session, &analysis);
    let m = comm_matrix(&prepared);
    let cells: Vec<(u32, u32, &str, u64, i64)> = m
        .entries
        .iter()
        .map(|e| (e.src, e.dst, e.op.as_str(), e.bytes, e.time_ns))
        .collect();
    // Textbook ring r → r+1: the AllReduce's 2(n−1)/n · 4000 bytes and the unknown operation's
    // 40 bytes once round it; the Send to its peer. No kernel: no time.
    let mut want = Vec::new();
    for r in 0..3u32 {
        let next = (r + 1) % 3;
        want.push((r, next, "AllReduce", 5333, 0));
        want.push((r, next, "AllToAllPivot", 40, 0));
        want.push((r, next, "Send", 256, 0));
    }
    want.sort_by_key(|w| (w.0, w.1, w.2));
    assert_eq!(cells, want);
    let kinds: Vec<&str> = m.notes.iter().map(|n| n.kind.as_str()).collect();
    assert!(kinds.contains(&"textbook-ring"), "{kinds:?}");
    assert!(kinds.contains(&"no-algorithm"), "{kinds:?}");
    assert!(kinds.contains(&"unknown-op"), "{kinds:?}");
    let ring = m.notes.iter().find(|n| n.kind == "textbook-ring").unwrap();
    assert_eq!(
        ring.count, 6,
        "three AllReduce and three AllToAllPivot calls"
    );
    assert!(ring.examples[0].starts_with("0xfeed"));
    assert_eq!(m.comms[0].rings, "textbook ring");
    // No kernel: the model and the periodicity are empty, not wrong.
    let hw = theory::Hardware::a100();
    assert!(perf_model(&analysis, &prepared, &hw).groups.is_empty());
    let p = periodicity(&session, &analysis, &prepared, StepSource::Nvtx);
    assert!(p.comms.is_empty());
    // Sends round a ring of three read as context parallelism: the layout predicts exactly the
    // ring's pairs, and the observed matrix departs from it nowhere.
    let predicted = predicted_matrix(&analysis.layout, None, &m);
    let pairs: Vec<(u32, u32, &str)> = predicted
        .entries
        .iter()
        .map(|e| (e.src, e.dst, e.parallelism.as_str()))
        .collect();
    assert_eq!(pairs, vec![(0, 1, "CP"), (1, 2, "CP"), (2, 0, "CP")]);
    assert!(predicted.unexpected.is_empty() && predicted.silent.is_empty());
    assert_eq!(
        predicted.by_parallelism[0].observed_bytes,
        3 * (5333 + 40 + 256)
    );
}

#[test]
fn zero_duration_kernels_are_left_out_and_counted() {
    let clean = support::preset("dp4");
    let mut cfg = clean.clone();
    cfg.imperfections.zero_duration_kernels = 5;
    let (_run, session, analysis) = support::analysed(&cfg);
    let prepared = Prepared::of(&session, &analysis);
    let m = comm_matrix(&prepared);
    let zero = m
        .notes
        .iter()
        .find(|n| n.kind == "zero-duration")
        .expect("a note");
    // Five per rank, four ranks (a kernel drawn twice counts once).
    assert!(zero.count > 0 && zero.count <= 20, "{zero:?}");
    // The bytes are the logs': the same as without them.
    let (_r, s2, a2) = support::analysed(&clean);
    let m2 = comm_matrix(&Prepared::of(&s2, &a2));
    let bytes = |m: &analyses::patterns::CommMatrix| {
        m.entries
            .iter()
            .map(|e| (e.src, e.dst, e.op.clone(), e.bytes))
            .collect::<Vec<_>>()
    };
    assert_eq!(bytes(&m), bytes(&m2));
    // The model leaves them out: every kernel it holds has a positive duration.
    let hw = analyses::hardware_from_topology(&session).unwrap();
    let model = perf_model(&analysis, &prepared, &hw);
    let held: u64 = model.groups.iter().map(|g| g.kernels).sum();
    let matched: u64 = analysis
        .alignments
        .processes
        .iter()
        .map(|p| p.matched_kernels())
        .sum();
    let note = model
        .notes
        .iter()
        .find(|n| n.kind == "zero-duration")
        .unwrap();
    assert_eq!(held + note.count, matched);
    assert_eq!(note.count, zero.count);
}
