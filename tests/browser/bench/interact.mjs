// Benchmark, not part of the test suite: the timeline's interactions on a loaded run. Loads each
// run on the built page (dist/) in Chromium, then measures, with the frame intervals
// (`requestAnimationFrame`) and the Long Tasks API:
//   - a hover sweep: 200 mouse moves across a track as fast as the browser takes them (each one a
//     hit test, and a hover request to the worker at most one at a time);
//   - the hover latency: from a move onto a kernel until its tooltip is shown (median of 20);
//   - held keys: W, D, S and A held one second each on the focused canvas.
// A page without a feature (an older build) reports nulls for it.
//
//   node tests/browser/bench/interact.mjs RUN...     (each RUN: a file, or a directory whose
//                                                     exports and logs are loaded together: a
//                                                     kernel's fields need its log lines)
import fs from 'node:fs';
import path from 'node:path';
import { startSession, timelineBox } from '../harness.mjs';
import { frameStats, startFrames, stopFrames } from './frames.mjs';

function exportsOf(p) {
  if (!fs.statSync(p).isDirectory()) return [p];
  return fs.readdirSync(p).sort().filter((e) => e.endsWith('.sqlite') || e.endsWith('.log')).map((e) => path.join(p, e));
}


async function record(page, body) {
  await page.evaluate(() => window.__longTasks.splice(0));
  await startFrames(page);
  await body();
  await page.waitForTimeout(300);
  const frames = await stopFrames(page);
  const tasks = await page.evaluate(() => window.__longTasks.splice(0));
  return { ...frameStats(frames), long_tasks: tasks.length, worst_task_ms: Math.round(Math.max(0, ...tasks)) };
}

async function measure(run) {
  const s = await startSession();
  try {
    const page = s.page;
    await page.goto(s.url);
    await page.getByTestId('load-demo').waitFor();
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.__longTasks.push(e.duration);
      }).observe({ type: 'longtask' });
    });
    await page.getByTestId('file-input').setInputFiles(exportsOf(run));
    await page.waitForFunction(() => document.querySelector('.page[data-analysis-ms]')
      && document.querySelector('[data-testid=timeline]')?.dataset.window,
    null, { timeout: 60 * 60_000, polling: 500 });
    await page.waitForTimeout(1500);
    const summary = (await page.getByTestId('timeline-summary').textContent()).trim();
    const canvas = page.getByTestId('timeline');
    const { box, scale } = await timelineBox(page);
    const y = box.y + (20 + 11) * scale;
    const xAt = (f) => box.x + (180 + 1020 * f) * scale;
    // Zoomed in so that row 0 shows separate kernels to hover.
    await page.mouse.move(xAt(0.5), y);
    for (let i = 0; i < 20; i++) await page.mouse.wheel(0, -200);
    await page.waitForTimeout(300);

    const sweep = await record(page, async () => {
      for (let i = 0; i <= 200; i++) await page.mouse.move(xAt(i / 200), y);
    });

    const tooltip = page.getByTestId('tooltip');
    const latencies = [];
    for (let i = 0; i < 60 && latencies.length < 20; i++) {
      await page.mouse.move(1, 1);
      await tooltip.waitFor({ state: 'detached', timeout: 2000 }).catch(() => {});
      const t0 = Date.now();
      await page.mouse.move(xAt((i + 0.5) / 60), y);
      if (await tooltip.waitFor({ timeout: 2000 }).then(() => true, () => false)) latencies.push(Date.now() - t0);
    }
    latencies.sort((a, b) => a - b);

    await canvas.focus();
    const before = await canvas.getAttribute('data-window');
    const keys = await record(page, async () => {
      for (const k of ['w', 'd', 's', 'a']) {
        await page.keyboard.down(k);
        await page.waitForTimeout(1000);
        await page.keyboard.up(k);
      }
    });
    const moved = (await canvas.getAttribute('data-window')) !== before;
    return {
      run: path.basename(run),
      kernels: Number(/([\d]+) kernels/.exec(summary)[1]),
      tracks: Number(/(\d+) tracks/.exec(summary)[1]),
      hover_sweep: sweep,
      hover_latency_median_ms: latencies.length ? latencies[Math.floor(latencies.length / 2)] : null,
      hover_latency_max_ms: latencies.length ? latencies[latencies.length - 1] : null,
      hovers_answered: latencies.length,
      held_keys: moved ? keys : null,
      errors: s.errors,
    };
  } finally {
    await s.close();
  }
}

const runs = process.argv.slice(2);
if (runs.length === 0) {
  console.error('usage: node tests/browser/bench/interact.mjs RUN...');
  process.exit(2);
}
for (const r of runs) console.log(JSON.stringify(await measure(r)));
