// Benchmark, not part of the test suite: drops files on the built page (dist/) in Chromium and
// reports the worker's time per file, the analysis time, the time from the drop to the first
// complete timeline (when exports are among the files), the peak memory of the browser's
// processes (RSS, sampled every 200 ms from `ps`), and the main thread's long tasks.
//
//   node tests/browser/bench/load.mjs [--align-workers=N] [--parse-workers=P] [--memory-limit-mb=M]
//                                     [--render] [--timeout-s=T] [--json] PATH...
//       PATH: files (logs, exports, Kineto traces), or directories searched for *.log, *.log.gz
//             and *.sqlite;
//       N: alignment workers (0: none; default: the page's choice);
//       P: log parsing workers (0: none; default: the page's choice);
//       M: the page's memory budget, to measure inputs its estimate would refuse;
//       --render: then pan and zoom the timeline and add its frame times (as render.mjs);
//       --insights: then wait for the insights the worker builds after the result and add
//               their build time in the worker, in all and per analysis (`insights_ms`: total,
//               diagnosis, steps, patterns, identity; ms);
//       --cold: drop as soon as the drop zone shows, not once the page's worker has warmed up
//               (it parses and analyses the built-in demo while the page waits for files:
//               a user takes longer than that to pick files);
//       T: give up after T seconds (default: an hour), reporting `timed_out`;
//       --json: the result on one line (`ncclscope-bench` reads it), else indented;
//       --dist=DIR: load the page built in DIR instead of dist/ (to compare two builds).
//
// Build the page first: `trunk build --release --cargo-profile wasm-release`.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { allRows, openView, startSession } from '../harness.mjs';
import { inputs, observeLongTasks, panAndZoom, takeLongTasks } from './frames.mjs';

/** RSS (bytes) of the browser process whose command line names `profile`, and of its descendants. */
function browserMemory(profile) {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,rss=,args='], { maxBuffer: 1 << 26 }).toString().split('\n');
  const procs = rows.filter(Boolean).map((l) => {
    const [pid, ppid, rss, ...args] = l.trim().split(/\s+/);
    return { pid: +pid, ppid: +ppid, rss: +rss * 1024, args: args.join(' ') };
  });
  const root = procs.find((p) => p.args.includes(`--user-data-dir=${profile}`) && !p.args.includes('--type='));
  if (!root) return { total: 0, largest: 0 };
  const tree = new Set([root.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs) if (!tree.has(p.pid) && tree.has(p.ppid)) { tree.add(p.pid); grew = true; }
  }
  const mine = procs.filter((p) => tree.has(p.pid));
  return { total: mine.reduce((a, p) => a + p.rss, 0), largest: Math.max(...mine.map((p) => p.rss)) };
}

const args = process.argv.slice(2);
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const flag = (name) => args.includes(`--${name}`);
const query = [['align-workers', option('align-workers')], ['parse-workers', option('parse-workers')],
  ['memory-limit-mb', option('memory-limit-mb')]]
  .filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`).join('&');
const timeoutMs = Number(option('timeout-s') ?? 3600) * 1000;
const files = inputs(args.filter((a) => !a.startsWith('--')));
if (files.length === 0) {
  console.error('usage: node tests/browser/bench/load.mjs [options] PATH...');
  process.exit(2);
}
// With exports or traces there is a timeline: done is when it is drawn, not only when the
// analysis is back.
const withTimeline = files.some((f) => /\.(sqlite|json|json\.gz)$/.test(f));
const bytes = files.reduce((a, f) => a + fs.statSync(f).size, 0);
const s = await startSession(option('dist') ? { dist: path.resolve(option('dist')) } : {});
try {
  await s.page.goto(query ? `${s.url}?${query}` : s.url);
  await s.page.getByTestId('load-demo').waitFor();
  const shown = Date.now();
  // The worker's warm-up (its time is reported), unless the drop is to find it cold.
  if (!flag('cold')) await s.page.locator('.page[data-worker-warm-ms]').waitFor({ state: 'attached', timeout: 30000 });
  const warmWaitS = (Date.now() - shown) / 1000;
  await observeLongTasks(s.page);
  const idle = browserMemory(s.profile);
  let peak = { ...idle };
  const sampler = setInterval(() => {
    const m = browserMemory(s.profile);
    peak = { total: Math.max(peak.total, m.total), largest: Math.max(peak.largest, m.largest) };
  }, 200);
  const t0 = Date.now();
  const left = () => Math.max(1, timeoutMs - (Date.now() - t0));
  await s.page.getByTestId('file-input').setInputFiles(files);
  let timedOut = false;
  let loadedMemory = 0;
  let timelineS = null;
  try {
    // The worker's memory once every file is read, before the analysis.
    await s.page.getByTestId('overall-progress').waitFor({ state: 'detached', timeout: left() });
    loadedMemory = Number(await s.page.locator('.page').getAttribute('data-worker-memory'));
    // Done: the analysis came back (and with exports, its timeline is drawn), or the worker
    // died (its files then say so) and none will.
    await s.page.waitForFunction((timeline) => {
      const died = [...document.querySelectorAll('[data-testid=status]')].some((c) => c.textContent.includes('loading worker'));
      const analysed = document.querySelector('.page[data-analysis-ms]');
      const drawn = document.querySelector('[data-testid=timeline]')?.dataset.window
        && /[1-9]\d* kernels/.test(document.querySelector('[data-testid=timeline-summary]')?.textContent ?? '');
      return died || (analysed && (!timeline || drawn));
    }, withTimeline, { timeout: left(), polling: 100 });
    // The frame that shows it.
    await s.page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    timelineS = (Date.now() - t0) / 1000;
  } catch (e) {
    if (!/Timeout/i.test(String(e))) throw e;
    timedOut = true;
  }
  const wall = (Date.now() - t0) / 1000;
  // Let the page draw what arrived, then read the main thread's long tasks.
  if (!timedOut) await s.page.waitForTimeout(1000);
  const longTasks = await takeLongTasks(s.page);
  clearInterval(sampler);
  // (Read before the file list: the page shows one view at a time, and the list is in Inputs.)
  const summary = (await s.page.getByTestId('timeline-summary').textContent().catch(() => '')) ?? '';
  // Every file's row (the list keeps only the rows its scroll box shows in the document).
  const rows = await allRows(s.page, 'file-list', (els) => els.map((e) => ({
    file: e.dataset.file,
    ms: Number(e.dataset.loadMs),
    status: e.querySelector('[data-testid=status]').textContent.slice(0, 160),
  })), (r) => r.file);
  const analysisMs = Number(await s.page.locator('.page').getAttribute('data-analysis-ms'));
  const workerMemory = Number(await s.page.locator('.page').getAttribute('data-worker-memory'));
  // The worker's counted heap after each stage of the load and at its peak in it.
  const heap = JSON.parse((await s.page.locator('.page').getAttribute('data-worker-heap')) ?? '[]');
  const loadMs = rows.reduce((a, r) => a + (r.ms || 0), 0);
  const failed = rows.filter((r) => !r.status.startsWith('loaded'));
  for (const r of failed) console.error(`not loaded: ${r.file}: ${r.status}`);
  if (flag('render') && !timedOut && withTimeline) await openView(s.page, 'timeline');
  const render = flag('render') && !timedOut && withTimeline ? await panAndZoom(s.page) : {};
  // Read last, so that waiting for them changes none of the figures above.
  let insightsMs = null;
  if (flag('insights') && !timedOut) {
    const el = s.page.locator('.page[data-insights-ms]');
    await el.waitFor({ state: 'attached', timeout: left() }).catch(() => {});
    insightsMs = JSON.parse((await el.getAttribute('data-insights-ms').catch(() => null)) ?? 'null');
  }
  const mb = (b) => (b / 1e6).toFixed(0);
  const result = {
    files: files.length,
    input_mb: +mb(bytes),
    timed_out: timedOut,
    wall_s: +wall.toFixed(1),
    timeline_s: timelineS === null ? null : +timelineS.toFixed(2),
    worker_load_s: +(loadMs / 1000).toFixed(1),
    worker_load_mb_per_s: +(bytes / 1e6 / (loadMs / 1000)).toFixed(0),
    // Each file's load time (on whichever worker loaded it), for small runs.
    ...(rows.length <= 16 ? { file_load_ms: Object.fromEntries(rows.map((r) => [r.file, Math.round(r.ms)])) } : {}),
    analysis_s: +(analysisMs / 1000).toFixed(2),
    // From the drop zone showing to the drop (0 with --cold), and the warm-up's own time.
    waited_for_warm_up_s: flag('cold') ? 0 : +warmWaitS.toFixed(2),
    worker_warm_up_ms: Number(await s.page.locator('.page').getAttribute('data-worker-warm-ms') ?? NaN),
    analysis_status: await s.page.getByTestId('analysis-status').textContent().catch(() => ''),
    kernels: Number(/(\d+) kernels/.exec(summary)?.[1] ?? 0),
    tracks: Number(/(\d+) tracks/.exec(summary)?.[1] ?? 0),
    browser_rss_idle_mb: +mb(idle.total),
    browser_rss_peak_mb: +mb(peak.total),
    largest_process_peak_mb: +mb(peak.largest),
    worker_wasm_memory_loaded_mb: +mb(loadedMemory),
    worker_wasm_memory_mb: +mb(workerMemory),
    worker_heap_mb: heap.map((h) => ({ stage: h.stage, live: +mb(h.live_bytes), peak: +mb(h.peak_bytes) })),
    main_thread_long_tasks: longTasks.length,
    main_thread_worst_task_ms: Math.round(Math.max(0, ...longTasks)),
    ...render,
    ...(flag('insights') ? { insights_ms: insightsMs } : {}),
    failed: failed.length,
    errors: s.errors,
  };
  console.log(flag('json') ? JSON.stringify(result) : JSON.stringify(result, null, 1));
} finally {
  await s.close();
}
