//! The page's parser, export reader, Kineto trace reader and step analysis, compiled for wasm32
//! with the page's profile (`wasm-release`, `+simd128` from `.cargo/config.toml`) and timed from
//! JavaScript in Chromium by `tests/browser/bench/wasm.mjs`, so that `ncclscope-bench` can set
//! them beside the native build on the same file in the same run. Only public APIs: `LogParser`,
//! `ingest_nsys::read_export` over `sqlsource_sqljs`, `ingest_kineto::KinetoStream`, exactly as
//! the page's worker calls them, and the step benchmark's own passes (`stage_passes.rs`, the
//! native benchmark's file).
//!
//! The JavaScript side does the timing (wasm32 has no clock of its own here); each call does
//! one whole unit of work and returns a count, so that nothing can be optimised away and the
//! native and wasm figures can be checked to agree.

use ingest_nccl::LogParser;
use ingest_nsys::{read_export, ReadOptions};
use js_sys::Uint8Array;
use sqlsource::{SqlSource, Value};
use sqlsource_sqljs::{SqlJs, SqlJsDb};
use wasm_bindgen::prelude::*;

// The very file the native step benchmark times, so both sides run the same code.
#[path = "../../src/stage_passes.rs"]
mod stage_passes;

/// A log's bytes, copied into wasm memory once so that the timed calls only parse.
#[wasm_bindgen]
pub struct LogBench {
    bytes: Vec<u8>,
}

#[wasm_bindgen]
impl LogBench {
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: &[u8]) -> LogBench {
        LogBench {
            bytes: bytes.to_vec(),
        }
    }

    /// Parses the whole log fed in `chunk`-byte pieces (the native benchmark feeds the same
    /// 1 MiB pieces); returns the operations found.
    pub fn parse(&self, chunk: usize) -> u32 {
        let mut p = LogParser::new("bench", 0);
        for c in self.bytes.chunks(chunk.max(1)) {
            p.feed(c);
        }
        p.finish().ops.len() as u32
    }
}

/// sql.js, initialised once (the page's worker does the same, see `app/src/loader.rs`).
#[wasm_bindgen]
pub struct ExportBench {
    sqljs: SqlJs,
}

#[wasm_bindgen]
impl ExportBench {
    /// Loads sql.js's wasm from `wasm_url`; `initSqlJs` must already be defined (the worker
    /// imports `sql-wasm.js` first, as the page's worker does).
    pub async fn init(wasm_url: String) -> Result<ExportBench, JsError> {
        let sqljs = sqlsource_sqljs::init(&wasm_url)
            .await
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(ExportBench { sqljs })
    }

    /// Opens an export from its bytes (sql.js copies them into its own memory): the first half
    /// of what the page does with a dropped export.
    pub fn open(&self, bytes: &Uint8Array) -> Result<ExportDb, JsError> {
        let db = self
            .sqljs
            .open(bytes)
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(ExportDb { db })
    }
}

/// An open export.
#[wasm_bindgen]
pub struct ExportDb {
    db: SqlJsDb,
}

#[wasm_bindgen]
impl ExportDb {
    /// `ingest_nsys::read_export`, the second half; returns the NCCL kernels read.
    pub fn read(&self) -> Result<u32, JsError> {
        let e = read_export(&self.db, "bench.sqlite", &ReadOptions::default())
            .map_err(|d| JsError::new(&d.message))?;
        Ok(e.kernels.len() as u32)
    }

    /// `SELECT count(*)` over the kernel table, through the same trait: SQLite's own scan, the
    /// reference the native benchmark also measures.
    pub fn count_kernels(&self) -> Result<f64, JsError> {
        let mut n = 0;
        self.db
            .for_each_row(
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL",
                &mut |row| {
                    if let Some(Value::Integer(c)) = row.first() {
                        n = *c;
                    }
                    Ok(())
                },
            )
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(n as f64)
    }
}

/// A Kineto trace read as the page reads one: `KinetoStream` fed the file's slices, each copied
/// into wasm memory as it arrives (the JavaScript side slices the file in 16 MiB pieces, as the
/// native benchmark feeds it).
#[wasm_bindgen]
pub struct KinetoBench {
    stream: Option<ingest_kineto::KinetoStream>,
}

impl Default for KinetoBench {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl KinetoBench {
    #[wasm_bindgen(constructor)]
    pub fn new() -> KinetoBench {
        KinetoBench {
            stream: Some(ingest_kineto::KinetoStream::new("bench")),
        }
    }

    pub fn feed(&mut self, piece: &[u8]) {
        if let Some(s) = self.stream.as_mut() {
            s.feed(piece);
        }
    }

    /// Ends the trace; returns `[NCCL kernels, events]` (the native benchmark checks both).
    pub fn finish(&mut self) -> Vec<f64> {
        let trace = self.stream.take().map(ingest_kineto::KinetoStream::finish);
        trace.map_or_else(Vec::new, |t| {
            vec![t.kernels.len() as f64, t.counts.events as f64]
        })
    }
}

/// A stage file's bytes, copied into wasm memory once; its records once read.
#[wasm_bindgen]
pub struct StagesBench {
    bytes: Vec<u8>,
    file: ingest_stages::StageFile,
}

#[wasm_bindgen]
impl StagesBench {
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: &[u8]) -> StagesBench {
        StagesBench {
            bytes: bytes.to_vec(),
            file: ingest_stages::StageFile::default(),
        }
    }

    /// `ingest_stages::read_stage_file` over the whole file, as the native benchmark reads it;
    /// keeps the records for the passes below and returns how many.
    pub fn read(&mut self) -> u32 {
        self.file = ingest_stages::StageFile::default();
        self.file = ingest_stages::read_stage_file("bench.csv", &self.bytes);
        self.file.records.len() as u32
    }

    /// The stage matrix and StageFrontier (`stage_passes::analyse`); returns `[steps analysed,
    /// the window's frontier ms]`.
    pub fn analyse(&self) -> Vec<f64> {
        let (steps, frontier_ms) = stage_passes::analyse(&self.file);
        vec![steps as f64, frontier_ms]
    }

    /// The reference: the per-stage max/mean pass (`stage_passes::max_mean`); returns M + A.
    pub fn max_mean(&self) -> f64 {
        let (m, a) = stage_passes::max_mean(&self.file);
        m + a
    }
}
