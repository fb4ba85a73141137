// The page stays responsive while a big log loads: the worker reads, parses and analyses it, the
// main thread only draws progress. Measured with the Long Tasks API from the moment the app has
// mounted; the big log is a real fixture repeated to over 100 MB in a temporary directory.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSession, withScreenshot, nativeSummary, fact, openView, FIXTURES } from './harness.mjs';

const SOURCE = path.join(FIXTURES, 'nccl', 'unknown-sglang-notes_tpgds-node0008-ranks8-15_subsysALL-init-coll_2.27.5_c.log');
const TARGET_BYTES = 100 * 1000 * 1000;
/**
 * What a pass/fail test can assert on a shared machine: no main-thread task blocks for a second,
 * as reading or parsing the log on the main thread would (it takes several seconds). The issue's
 * 100 ms figure is a timing, measured by the benchmarks (tests/browser/bench/longtasks.mjs, the
 * long tasks of a load with their causes), not here: a loaded 2-core machine passed it 80 times
 * in 81 and failed it once at 206 ms (issue 30).
 */
const MAX_TASK_MS = 1000;

let s;
let dir;
before(async () => {
  s = await startSession();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-big-'));
});
after(async () => {
  await s?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** `SOURCE` repeated until the file holds at least `TARGET_BYTES`. */
function bigLog() {
  const chunk = fs.readFileSync(SOURCE);
  const p = path.join(dir, 'big-repeated.log');
  const fd = fs.openSync(p, 'w');
  const block = Buffer.concat(Array(64).fill(chunk));
  for (let written = 0; written < TARGET_BYTES; written += block.length) fs.writeSync(fd, block);
  fs.closeSync(fd);
  return p;
}

test('no main-thread task blocks while a >100 MB log loads, with progress shown', { skip: !fs.existsSync(SOURCE) }, async () => {
  const big = bigLog();
  const size = fs.statSync(big).size;
  await withScreenshot(s.page, 'responsive', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').waitFor();
    await s.page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.__longTasks.push({ start: e.startTime, ms: e.duration });
      }).observe({ type: 'longtask' });
      // Every per-file status the page shows while loading, to see the progress advance.
      window.__statuses = new Set();
      const seen = () => document.querySelectorAll('[data-testid=status]').forEach((c) => window.__statuses.add(c.textContent));
      new MutationObserver(seen).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    const t0 = Date.now();
    await s.page.getByTestId('file-input').setInputFiles([big]);
    await s.page.getByTestId('overall-progress').waitFor({ timeout: 10_000 });
    // The files' progress is in the Inputs view (a drop opens the overview).
    await openView(s.page, 'inputs');
    const name = path.basename(big);
    const ops = Number(await fact(s.page, name, 'NCCL operations'));
    const seconds = (Date.now() - t0) / 1000;

    const tasks = await s.page.evaluate(() => window.__longTasks);
    const worst = Math.max(0, ...tasks.map((t) => t.ms));
    console.log(`${(size / 1e6).toFixed(0)} MB loaded in ${seconds.toFixed(1)} s; ${tasks.length} long tasks, worst ${worst.toFixed(0)} ms`);
    assert.ok(worst <= MAX_TASK_MS, `long tasks: ${JSON.stringify(tasks)}`);
    // The instrument works: a 300 ms busy task on the main thread is seen as a long task.
    await s.page.evaluate(() => setTimeout(() => { const end = performance.now() + 300; while (performance.now() < end); }, 0));
    await s.page.waitForFunction(() => window.__longTasks.some((t) => t.ms >= 250));

    // Progress went through intermediate values, shown as bytes and percent.
    const statuses = await s.page.evaluate(() => [...window.__statuses]);
    const partial = statuses.filter((t) => /^reading .+ \/ .+ \(([1-9]|[1-9]\d) %\)/.test(t));
    assert.ok(partial.length >= 2, `intermediate progress: ${statuses.join(' | ')}`);
    await s.page.getByTestId('overall-progress').waitFor({ state: 'detached' });

    // And the result is right: the native command counts the same operations.
    assert.equal(ops, nativeSummary([big]).inputs[0].nccl_ops);
    assert.deepEqual(s.errors, []);
  });
});
