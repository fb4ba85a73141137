// Benchmark, not part of the test suite: loads each run on the built page (dist/) in Chromium,
// then scripts zooms (wheel) and pans (drag) over the timeline through `page.mouse` and reports
// the frame times (intervals between `requestAnimationFrame` callbacks) and the main thread's
// long tasks, both while the timeline arrives and while it is panned and zoomed; with several
// runs, the exponent of frame time against kernel count fitted over them.
//
//   node tests/browser/bench/render.mjs RUN...      (each RUN: a file, or a directory whose
//                                                     *.sqlite exports are loaded together)
//
// Generate runs with `cargo run --release -p ncclscope-cli -- synth --preset tp4 --iterations N
// --out /tmp/...`; build the page first: `trunk build --release --cargo-profile wasm-release`.
import fs from 'node:fs';
import path from 'node:path';
import { startSession } from '../harness.mjs';
import { observeLongTasks, panAndZoom, takeLongTasks } from './frames.mjs';

function exportsOf(p) {
  if (!fs.statSync(p).isDirectory()) return [p];
  return fs.readdirSync(p).sort().filter((e) => e.endsWith('.sqlite')).map((e) => path.join(p, e));
}

async function measure(run) {
  const files = exportsOf(run);
  const s = await startSession();
  try {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').waitFor();
    await observeLongTasks(s.page);
    const t0 = Date.now();
    await s.page.getByTestId('file-input').setInputFiles(files);
    await s.page.waitForFunction(() => document.querySelector('.page[data-analysis-ms]')
      && document.querySelector('[data-testid=timeline]')?.dataset.window,
    null, { timeout: 60 * 60_000, polling: 500 });
    const loadS = (Date.now() - t0) / 1000;
    await s.page.waitForTimeout(1500);
    const arrival = await takeLongTasks(s.page);
    const summary = (await s.page.getByTestId('timeline-summary').textContent()).trim();
    const kernels = Number(/([\d]+) kernels/.exec(summary)[1]);
    const frames = await panAndZoom(s.page);
    return {
      run: path.basename(run),
      kernels,
      tracks: Number(/(\d+) tracks/.exec(summary)[1]),
      load_s: +loadS.toFixed(1),
      arrival_long_tasks: arrival.length,
      arrival_worst_task_ms: Math.round(Math.max(0, ...arrival)),
      ...frames,
      errors: s.errors,
    };
  } finally {
    await s.close();
  }
}

/** Least-squares slope of log(y) against log(x). */
function exponent(points) {
  const p = points.filter(([x, y]) => x > 0 && y > 0).map(([x, y]) => [Math.log(x), Math.log(y)]);
  if (p.length < 2) return null;
  const mx = p.reduce((a, [x]) => a + x, 0) / p.length;
  const my = p.reduce((a, [, y]) => a + y, 0) / p.length;
  const num = p.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const den = p.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return den ? +(num / den).toFixed(2) : null;
}

const runs = process.argv.slice(2);
if (runs.length === 0) {
  console.error('usage: node tests/browser/bench/render.mjs RUN...');
  process.exit(2);
}
const results = [];
for (const r of runs) {
  const m = await measure(r);
  results.push(m);
  console.log(JSON.stringify(m));
}
if (results.length > 1) {
  console.log(JSON.stringify({
    exponent_mean_frame: exponent(results.map((r) => [r.kernels, r.mean_ms])),
    exponent_p95_frame: exponent(results.map((r) => [r.kernels, r.p95_ms])),
    exponent_max_frame: exponent(results.map((r) => [r.kernels, r.max_ms])),
    exponent_arrival_task: exponent(results.map((r) => [r.kernels, r.arrival_worst_task_ms])),
  }));
}
