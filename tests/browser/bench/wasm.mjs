// Benchmark driver, not part of the test suite: times the page's log parser, export reader,
// Kineto trace reader or step analysis, built for wasm32 as the page ships it
// (crates/dev/bench/wasm), in a worker of headless Chromium, on one file; prints one JSON line.
// `ncclscope-bench` (scripts/bench) runs it beside the native build on the same file.
//
//   node tests/browser/bench/wasm.mjs parse|export|kineto|steps FILE [--rounds=N]
//
// parse: {ops, parse_s: [per round]}; export: {kernels, kernel_rows, open_s, read_s, count_s}
// (sql.js opening the file's bytes, `ingest_nsys::read_export`, `SELECT count(*)` of kernels);
// kineto: {kernels, events, read_s} (`KinetoStream` fed 16 MiB slices); steps: {records, steps,
// frontier_ms, read_s, analyse_s, max_mean_s} (a stage file read, StageFrontier, max/mean).
// Needs target/bench-web/ (scripts/bench builds it).
import path from 'node:path';
import { ROOT, startSession } from '../harness.mjs';

const args = process.argv.slice(2);
const [kind, file] = args.filter((a) => !a.startsWith('--'));
const rounds = Number(args.find((a) => a.startsWith('--rounds='))?.split('=')[1] ?? 3);
if (!['parse', 'export', 'kineto', 'steps'].includes(kind) || !file) {
  console.error('usage: node tests/browser/bench/wasm.mjs parse|export|kineto|steps FILE [--rounds=N]');
  process.exit(2);
}
const s = await startSession({ dist: path.join(ROOT, 'target/bench-web') });
try {
  await s.page.goto(s.url);
  await s.page.locator('#file').setInputFiles(file);
  const result = await s.page.evaluate(([k, r]) => window.runBench(k, r), [kind, rounds]);
  console.log(JSON.stringify({ ...result, errors: s.errors }));
} finally {
  await s.close();
}
