// Scratch: read one export, timing it.
fn main() {
    let p = std::env::args().nth(1).unwrap();
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let db = sqlsource_native::NativeDb::open(std::path::Path::new(&p)).unwrap();
        let x = ingest_nsys::read_export(&db, &p, &Default::default()).unwrap();
        eprintln!(
            "TOTAL {:.4} {} kernels",
            t.elapsed().as_secs_f64(),
            x.kernels.len()
        );
    }
}
