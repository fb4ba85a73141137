// Shared by the page benchmarks: frame intervals (ms) between animation frames and their summary,
// the main thread's long tasks, and the scripted pan and zoom of the timeline.
import fs from 'node:fs';
import path from 'node:path';
import { timelineBox } from '../harness.mjs';

/** The input files of the paths given (folders walked, sorted): logs, gzipped logs, exports. */
export function inputs(paths) {
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

export const frameStats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
  return {
    frames: s.length,
    max_ms: +(s[s.length - 1] ?? 0).toFixed(1),
    p95_ms: +at(0.95).toFixed(1),
    mean_ms: +(s.reduce((a, x) => a + x, 0) / Math.max(1, s.length)).toFixed(1),
    over_20ms: s.filter((x) => x > 20).length,
  };
};

/** Starts recording the intervals between animation frames in the page (`stopFrames` ends it). */
export const startFrames = (page) => page.evaluate(() => {
  window.__frames = [];
  let last = null;
  const tick = (t) => {
    if (last !== null) window.__frames.push(t - last);
    last = t;
    if (window.__recording) requestAnimationFrame(tick);
  };
  window.__recording = true;
  requestAnimationFrame(tick);
});

/** Stops recording; the frame intervals so far. */
export const stopFrames = (page) => page.evaluate(() => { window.__recording = false; return window.__frames; });

/** Starts collecting the main thread's long tasks (Long Tasks API) in the page. */
export const observeLongTasks = (page) => page.evaluate(() => {
  window.__longTasks = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__longTasks.push(e.duration);
  }).observe({ type: 'longtask' });
});

/** The long tasks (ms) seen since the last call. */
export const takeLongTasks = (page) => page.evaluate(() => window.__longTasks.splice(0));

/**
 * Pans and zooms the loaded timeline through `page.mouse` while recording frame intervals:
 * from the whole run, 12 wheel notches in (each ×0.8) and two 30-step drags, three times at
 * growing depth, then 40 notches out and two more drags. Returns the frame statistics and the
 * main thread's long tasks during it.
 */
export async function panAndZoom(page) {
  await takeLongTasks(page);
  await startFrames(page);
  const { box, scale } = await timelineBox(page);
  const y = box.y + Math.min(box.height - 4, 40 * scale);
  const xAt = (f) => box.x + (180 + 1020 * f) * scale;
  await page.mouse.move(xAt(0.5), y);
  const drag = async (from, to, steps) => {
    await page.mouse.move(xAt(from), y);
    await page.mouse.down();
    await page.mouse.move(xAt(to), y, { steps });
    await page.mouse.up();
  };
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 12; i++) {
      await page.mouse.move(xAt(0.3 + 0.1 * round), y);
      await page.mouse.wheel(0, -200);
    }
    await drag(0.8, 0.2, 30);
    await drag(0.2, 0.9, 30);
  }
  for (let i = 0; i < 40; i++) await page.mouse.wheel(0, 200);
  await drag(0.1, 0.9, 30);
  await drag(0.9, 0.1, 30);
  await page.waitForTimeout(300);
  const frames = frameStats(await stopFrames(page));
  const tasks = await takeLongTasks(page);
  return { ...frames, interaction_long_tasks: tasks.length, interaction_worst_task_ms: Math.round(Math.max(0, ...tasks)) };
}
