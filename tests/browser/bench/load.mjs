// Benchmark, not part of the test suite: drops files on the built page (dist/) in Chromium and
// reports the worker's time per file, the analysis time, the total wall time, the peak memory
// of the browser's processes (RSS, sampled every 200 ms from `ps`), and the main thread's long tasks.
//
//   node tests/browser/bench/load.mjs [--align-workers=N] [--memory-limit-mb=M] PATH...
//                                                    (files, or directories searched for
//                                                     *.log, *.log.gz and *.sqlite; N alignment
//                                                     workers, 0: none; default: the page's choice;
//                                                     M: the page's memory budget, to measure
//                                                     inputs its estimate would refuse)
//
// Build the page first: `trunk build --release --cargo-profile wasm-release`.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSession } from '../harness.mjs';

function inputs(paths) {
  const out = [];
  for (const p of paths) {
    if (fs.statSync(p).isDirectory()) {
      for (const e of fs.readdirSync(p).sort()) {
        const f = path.join(p, e);
        if (fs.statSync(f).isDirectory()) out.push(...inputs([f]));
        else if (/\.(log|log\.gz|sqlite)$/.test(e)) out.push(f);
      }
    } else out.push(p);
  }
  return out;
}

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
const query = [['align-workers', option('align-workers')], ['memory-limit-mb', option('memory-limit-mb')]]
  .filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`).join('&');
const files = inputs(args.filter((a) => !a.startsWith('--')));
if (files.length === 0) {
  console.error('usage: node tests/browser/bench/load.mjs PATH...');
  process.exit(2);
}
const bytes = files.reduce((a, f) => a + fs.statSync(f).size, 0);
const s = await startSession();
try {
  await s.page.goto(query ? `${s.url}?${query}` : s.url);
  await s.page.getByTestId('load-demo').waitFor();
  await s.page.evaluate(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__longTasks.push(e.duration);
    }).observe({ type: 'longtask' });
  });
  const idle = browserMemory(s.profile);
  let peak = { ...idle };
  const sampler = setInterval(() => {
    const m = browserMemory(s.profile);
    peak = { total: Math.max(peak.total, m.total), largest: Math.max(peak.largest, m.largest) };
  }, 200);
  const t0 = Date.now();
  await s.page.getByTestId('file-input').setInputFiles(files);
  // The worker's memory once every file is read, before the analysis.
  await s.page.getByTestId('overall-progress').waitFor({ state: 'detached', timeout: 60 * 60_000 });
  const loadedMemory = Number(await s.page.locator('.page').getAttribute('data-worker-memory'));
  // Done: the analysis came back, or the worker died (its files then say so) and none will.
  await s.page.waitForFunction(() => document.querySelector('.page[data-analysis-ms]')
    || [...document.querySelectorAll('[data-testid=status]')].some((c) => c.textContent.includes('loading worker')),
  null, { timeout: 60 * 60_000, polling: 500 });
  const wall = (Date.now() - t0) / 1000;
  // Let the page draw what arrived, then read the main thread's long tasks.
  await s.page.waitForTimeout(1000);
  const longTasks = await s.page.evaluate(() => window.__longTasks);
  clearInterval(sampler);
  const rows = await s.page.getByTestId('file-row').evaluateAll((els) => els.map((e) => ({
    file: e.dataset.file,
    ms: Number(e.dataset.loadMs),
    status: e.querySelector('[data-testid=status]').textContent.slice(0, 160),
  })));
  const analysisMs = Number(await s.page.locator('.page').getAttribute('data-analysis-ms'));
  const workerMemory = Number(await s.page.locator('.page').getAttribute('data-worker-memory'));
  const loadMs = rows.reduce((a, r) => a + r.ms, 0);
  const failed = rows.filter((r) => !r.status.startsWith('loaded'));
  for (const r of failed) console.log(`not loaded: ${r.file}: ${r.status}`);
  const mb = (b) => (b / 1e6).toFixed(0);
  console.log(JSON.stringify({
    files: files.length,
    input_mb: +mb(bytes),
    wall_s: +wall.toFixed(1),
    worker_load_s: +(loadMs / 1000).toFixed(1),
    worker_load_mb_per_s: +(bytes / 1e6 / (loadMs / 1000)).toFixed(0),
    analysis_s: +(analysisMs / 1000).toFixed(2),
    analysis_status: await s.page.getByTestId('analysis-status').textContent().catch(() => ''),
    browser_rss_idle_mb: +mb(idle.total),
    browser_rss_peak_mb: +mb(peak.total),
    largest_process_peak_mb: +mb(peak.largest),
    worker_wasm_memory_loaded_mb: +mb(loadedMemory),
    worker_wasm_memory_mb: +mb(workerMemory),
    main_thread_long_tasks: longTasks.length,
    main_thread_worst_task_ms: Math.round(Math.max(0, ...longTasks)),
    failed: failed.length,
    errors: s.errors,
  }, null, 1));
} finally {
  await s.close();
}
