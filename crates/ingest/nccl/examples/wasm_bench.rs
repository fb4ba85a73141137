//! The parser compiled to wasm, for timing it against the native build on the same file:
//! `crates/ingest/nccl/examples/wasm_bench.sh FILE` builds this for `wasm32-unknown-unknown`,
//! runs `wasm-bindgen --target nodejs` on it and times [`Bench::parse`] from `wasm_bench.mjs`
//! in node (V8, Chromium's engine). Native has nothing to build here.

#![cfg(target_arch = "wasm32")]

use ingest_nccl::LogParser;
use wasm_bindgen::prelude::wasm_bindgen;

/// The file's bytes, copied into wasm memory once so that the timed calls only parse.
#[wasm_bindgen]
pub struct Bench {
    bytes: Vec<u8>,
}

#[wasm_bindgen]
impl Bench {
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: &[u8]) -> Bench {
        Bench {
            bytes: bytes.to_vec(),
        }
    }

    /// Parses the whole file fed in `chunk`-byte pieces, as the page does; returns the
    /// operations found (so the work cannot be skipped).
    pub fn parse(&self, chunk: usize) -> u32 {
        let mut p = LogParser::new("bench", 0);
        for c in self.bytes.chunks(chunk.max(1)) {
            p.feed(c);
        }
        p.finish().ops.len() as u32
    }
}
