//! The banded aligner in wasm: `bench(n)` aligns two sequences of about `n` operations (the same
//! inputs as `bench_scale`) and returns "seconds score". Built for wasm32 and run under node:
//! `scripts/wasm-bench` (see docs/PERFORMANCE.md). Natively it only prints one run.

mod bench_common;

use align::nw::align_fast;
use align::scoring::{Scorer, Scoring};

fn run(n: usize, now: impl Fn() -> f64) -> String {
    let (k, l) = bench_common::sequences(n, n as u64);
    let scoring = Scoring::rich();
    let sc = Scorer {
        scoring: &scoring,
        kernels: &k,
        log: &l,
        time: None,
    };
    let t = now();
    let al = align_fast(&sc, k.len(), l.len());
    format!("{:.3} {}", now() - t, al.score)
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn bench(n: u32) -> String {
    run(n as usize, || js_sys::Date::now() / 1000.0)
}

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let start = std::time::Instant::now();
        println!("{}", run(100_000, || start.elapsed().as_secs_f64()));
    }
}
