// Times the page's parser, export reader, Kineto trace reader and step analysis
// (crates/dev/bench/wasm, built with the page's profile) on one file. A classic worker, loaded like the page's: sql.js's scripts first, then the
// wasm-bindgen glue (`--target no-modules`, global `wasm_bindgen`).
importScripts('sql-wasm.js', 'sql-batch.js', 'ncclscope_bench_wasm.js');
const ready = wasm_bindgen('ncclscope_bench_wasm_bg.wasm');

const seconds = (t0) => (performance.now() - t0) / 1000;

/** Each round parses the whole log in 1 MiB pieces (as the native benchmark feeds it). */
function parse(bytes, rounds) {
  const bench = new wasm_bindgen.LogBench(bytes);
  const times = [];
  let ops = 0;
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    ops = bench.parse(16 << 20);
    times.push(seconds(t0));
  }
  bench.free();
  return { ops, parse_s: times };
}

/** Each round opens the export in sql.js from its bytes, reads it, and counts its kernel rows. */
async function readExport(bytes, rounds) {
  const sqljs = await wasm_bindgen.ExportBench.init('sql-wasm.wasm');
  const open = [];
  const read = [];
  const count = [];
  let kernels = 0;
  let rows = 0;
  for (let i = 0; i < rounds; i++) {
    let t0 = performance.now();
    const db = sqljs.open(bytes);
    open.push(seconds(t0));
    t0 = performance.now();
    kernels = db.read();
    read.push(seconds(t0));
    t0 = performance.now();
    rows = db.count_kernels();
    count.push(seconds(t0));
    db.free();
  }
  return { kernels, kernel_rows: rows, open_s: open, read_s: read, count_s: count };
}

/** Each round reads the trace fed in 16 MiB slices (as the page's worker and the native
 *  benchmark feed it; each slice is copied into wasm memory, as in the page). */
function kineto(bytes, rounds) {
  const piece = 16 << 20;
  const times = [];
  let counts = [0, 0];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    const reader = new wasm_bindgen.KinetoBench();
    for (let at = 0; at < bytes.length; at += piece) reader.feed(bytes.subarray(at, at + piece));
    counts = reader.finish();
    times.push(seconds(t0));
    reader.free();
  }
  return { kernels: counts[0], events: counts[1], read_s: times };
}

/** Each round reads the stage file's records; then the step analysis and the plain max/mean
 *  pass over them, each `rounds` times. */
function steps(bytes, rounds) {
  const bench = new wasm_bindgen.StagesBench(bytes);
  const read = [];
  const analyse = [];
  const maxMean = [];
  let records = 0;
  let found = [0, 0];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    records = bench.read();
    read.push(seconds(t0));
  }
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    found = bench.analyse();
    analyse.push(seconds(t0));
  }
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    bench.max_mean();
    maxMean.push(seconds(t0));
  }
  bench.free();
  return { records, steps: found[0], frontier_ms: found[1], read_s: read, analyse_s: analyse, max_mean_s: maxMean };
}

const benches = { parse, export: readExport, kineto, steps };

onmessage = async ({ data: { kind, rounds, file } }) => {
  try {
    await ready;
    const bytes = new Uint8Array(await file.arrayBuffer());
    const result = await benches[kind](bytes, rounds);
    postMessage({ kind, bytes: bytes.length, ...result });
  } catch (e) {
    postMessage({ error: String((e && e.stack) || e) });
  }
};
