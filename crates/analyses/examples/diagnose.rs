//! Prints the diagnosis of the NCCL logs given as arguments (one session) as JSON, and on
//! standard error how long parsing and diagnosing took.
fn main() {
    let t0 = std::time::Instant::now();
    let logs: Vec<ingest_nccl::ParsedLog> = std::env::args()
        .skip(1)
        .enumerate()
        .map(|(i, p)| {
            let bytes = std::fs::read(&p).expect("read");
            ingest_nccl::parse_bytes(&p, i as u32, &bytes)
        })
        .collect();
    let ops: usize = logs.iter().map(|l| l.ops.len()).sum();
    let t1 = std::time::Instant::now();
    let refs: Vec<&ingest_nccl::ParsedLog> = logs.iter().collect();
    // As the command runs it: the analysis's communicators given.
    let inits: Vec<model::log::CommInit> = logs.iter().flat_map(|l| l.inits.clone()).collect();
    let comms = enrich::group(&inits, logs.iter().flat_map(|l| &l.ops));
    let t2 = std::time::Instant::now();
    let ctx = analyses::diagnosis::Context {
        communicators: Some(&comms),
        clocks: None,
    };
    let d = analyses::diagnosis::diagnose(&refs, ctx);
    let t3 = std::time::Instant::now();
    eprintln!(
        "{} logs, {ops} operations: parsed in {:.2} s, grouped in {:.2} s, diagnosed in {:.2} s, {} findings",
        logs.len(),
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        (t3 - t2).as_secs_f64(),
        d.findings.len()
    );
    println!("{}", serde_json::to_string_pretty(&d).expect("json"));
}
