// Benchmark tool, not part of the test suite: what runs in the main thread's long tasks. Loads
// files on the built page as load.mjs does (then optionally pans and zooms, as load.mjs --render),
// records a Chromium trace (CDP `Tracing`: the devtools timeline and the V8 sampling profiler),
// and prints every main-thread task over the threshold with its time per trace event (self
// time: script, style, layout, paint, ...) and its hottest functions by CPU samples.
//
//   node tests/browser/bench/longtasks.mjs [--dist=DIR] [--render] [--min-ms=50] [--top=12]
//                                          [--trace=FILE] PATH...
//       DIR: the built page to load (default dist/); for function names in the samples, bind the
//            page's wasm with wasm-bindgen and skip wasm-opt (and drop index.html's integrity);
//       --render: then pan and zoom (frames.mjs `panAndZoom`) inside the same trace;
//       FILE: also keep the raw trace (JSON, opens in chrome://tracing or Perfetto).
import fs from 'node:fs';
import path from 'node:path';
import { startSession, ROOT } from '../harness.mjs';
import { inputs, observeLongTasks, panAndZoom, takeLongTasks } from './frames.mjs';

const args = process.argv.slice(2);
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.split('=').slice(1).join('=');
const flag = (name) => args.includes(`--${name}`);
const minMs = Number(option('min-ms') ?? 50);
const top = Number(option('top') ?? 12);
const dist = option('dist') ? path.resolve(option('dist')) : path.join(ROOT, 'dist');

const files = inputs(args.filter((a) => !a.startsWith('--')));
if (!files.length) {
  console.error('usage: node tests/browser/bench/longtasks.mjs [options] PATH...');
  process.exit(2);
}

const CATEGORIES = ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'toplevel', 'v8.execute',
  'blink', 'blink.user_timing', 'disabled-by-default-v8.cpu_profiler', 'v8'].join(',');

const s = await startSession({ dist });
let events = [];
try {
  await s.page.goto(s.url);
  await s.page.getByTestId('load-demo').waitFor();
  await observeLongTasks(s.page);
  const cdp = await s.page.context().newCDPSession(s.page);
  await cdp.send('Tracing.start', { categories: CATEGORIES, transferMode: 'ReturnAsStream' });
  const t0 = Date.now();
  await s.page.getByTestId('file-input').setInputFiles(files);
  const withTimeline = files.some((f) => f.endsWith('.sqlite'));
  await s.page.waitForFunction((timeline) => {
    const analysed = document.querySelector('.page[data-analysis-ms]');
    const drawn = document.querySelector('[data-testid=timeline]')?.dataset.window
      && /[1-9]\d* kernels/.test(document.querySelector('[data-testid=timeline-summary]')?.textContent ?? '');
    return analysed && (!timeline || drawn);
  }, withTimeline, { timeout: 3_600_000, polling: 100 });
  console.error(`longtasks: analysed and drawn after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  await s.page.waitForTimeout(1500);
  console.error('longtasks: Long Tasks API, drop to drawn (ms):', JSON.stringify((await takeLongTasks(s.page)).map(Math.round)));
  if (flag('render')) console.error('longtasks: pan and zoom', JSON.stringify(await panAndZoom(s.page)));
  const done = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
  await cdp.send('Tracing.end');
  const { stream } = await done;
  let text = '';
  for (;;) {
    const { data, eof, base64Encoded } = await cdp.send('IO.read', { handle: stream, size: 1 << 24 });
    text += base64Encoded ? Buffer.from(data, 'base64').toString('utf8') : data;
    if (eof) break;
  }
  await cdp.send('IO.close', { handle: stream });
  if (option('trace')) fs.writeFileSync(option('trace'), text);
  const parsed = JSON.parse(text);
  events = Array.isArray(parsed) ? parsed : parsed.traceEvents;
} finally {
  await s.close();
}

// The page's main thread: the renderer thread named CrRendererMain with the most script.
const names = new Map();
for (const e of events) {
  if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args.name);
}
const busy = new Map();
for (const e of events) {
  const k = `${e.pid}:${e.tid}`;
  if (names.get(k) === 'CrRendererMain' && e.ph === 'X' && e.name === 'FunctionCall') busy.set(k, (busy.get(k) ?? 0) + e.dur);
}
const main = [...busy.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
if (!main) {
  console.log('no main thread found in the trace');
  process.exit(1);
}
const [mainPid, mainTid] = main.split(':').map(Number);
const onMain = events.filter((e) => e.pid === mainPid && e.tid === mainTid && e.ph === 'X' && e.dur !== undefined)
  .sort((a, b) => a.ts - b.ts || b.dur - a.dur);

// CPU samples of the main thread (V8's sampling profiler, as trace ProfileChunk events).
const nodes = new Map();
const samples = [];
const starts = new Map();
for (const e of events) {
  if (e.name === 'Profile' && e.pid === mainPid && e.tid === mainTid) starts.set(e.id, e.args.data.startTime);
}
const clock = new Map();
for (const e of events) {
  if (e.name !== 'ProfileChunk' || e.pid !== mainPid || !starts.has(e.id)) continue;
  const d = e.args.data;
  for (const n of d.cpuProfile?.nodes ?? []) nodes.set(`${e.id}:${n.id}`, n);
  let t = clock.get(e.id) ?? starts.get(e.id) ?? 0;
  const ids = d.cpuProfile?.samples ?? [];
  const deltas = d.timeDeltas ?? [];
  for (let i = 0; i < ids.length; i++) {
    t += deltas[i] ?? 0;
    samples.push({ t, node: `${e.id}:${ids[i]}` });
  }
  clock.set(e.id, t);
}
// The page's User Timing marks (`performance.mark`), by time.
const marks = events.filter((e) => e.pid === mainPid && (e.cat ?? '').includes('user_timing') && e.ph !== 'M')
  .map((e) => ({ ts: e.ts, name: e.name })).sort((a, b) => a.ts - b.ts);
const fnName = (key) => {
  const n = nodes.get(key);
  if (!n) return '?';
  const f = n.callFrame;
  const where = f.url ? ` ${path.basename(f.url)}` : '';
  return `${f.functionName || '(anonymous)'}${where}`;
};

// Top-level tasks over the threshold, with the self time of each event nested in them.
const tasks = onMain.filter((e) => (e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask') && e.dur >= minMs * 1000);
const toplevel = [];
for (const t of tasks) {
  if (toplevel.length && t.ts < toplevel[toplevel.length - 1].ts + toplevel[toplevel.length - 1].dur) continue;
  toplevel.push(t);
}
const firstTs = onMain[0]?.ts ?? 0;
console.log(`main thread ${main}: ${toplevel.length} tasks ≥ ${minMs} ms`);
for (const t of toplevel) {
  const end = t.ts + t.dur;
  const inside = onMain.filter((e) => e !== t && e.ts >= t.ts && e.ts + e.dur <= end);
  // Self time: each event's duration minus its children's (a stack over the sorted events).
  const self = new Map();
  const stack = [];
  const close = (until) => {
    while (stack.length && stack[stack.length - 1].end <= until) {
      const done = stack.pop();
      self.set(done.name, (self.get(done.name) ?? 0) + done.self);
    }
  };
  for (const e of inside) {
    close(e.ts);
    const rec = { name: e.name, end: e.ts + e.dur, self: e.dur };
    if (stack.length) stack[stack.length - 1].self -= e.dur;
    stack.push(rec);
  }
  close(Infinity);
  const covered = [...self.values()].reduce((a, x) => a + x, 0);
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([n, us]) => `${n} ${(us / 1000).toFixed(1)}`);
  console.log(`\n${(t.dur / 1000).toFixed(0)} ms at +${((t.ts - firstTs) / 1e6).toFixed(2)} s` +
    ` (events cover ${(covered / 1000).toFixed(0)} ms): ${rows.join(' · ')}`);
  const inTask = [...new Set(marks.filter((m) => m.ts >= t.ts && m.ts <= end).map((m) => m.name))];
  if (inTask.length) console.log(`  marks: ${inTask.join(' · ')}`);
  const bySelf = new Map();
  let n = 0;
  for (const x of samples) {
    if (x.t < t.ts || x.t > end) continue;
    n++;
    const k = fnName(x.node);
    bySelf.set(k, (bySelf.get(k) ?? 0) + 1);
  }
  if (n) {
    const hot = [...bySelf.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([k, c]) => `${k} ${(100 * c / n).toFixed(0)}%`);
    console.log(`  ${n} samples: ${hot.join(' · ')}`);
  }
}
