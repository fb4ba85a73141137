//! Prints the diagnosis of the NCCL logs given as arguments (one session), as JSON.
fn main() {
    let logs: Vec<ingest_nccl::ParsedLog> = std::env::args()
        .skip(1)
        .enumerate()
        .map(|(i, p)| {
            let bytes = std::fs::read(&p).expect("read");
            ingest_nccl::parse_bytes(&p, i as u32, &bytes)
        })
        .collect();
    let refs: Vec<&ingest_nccl::ParsedLog> = logs.iter().collect();
    let d = analyses::diagnosis::diagnose(&refs, Default::default());
    println!(
        "{}",
        serde_json::to_string_pretty(&d.findings).expect("json")
    );
    if let Some(f) = &d.first_error {
        println!("first error: {f:?}");
    }
}
