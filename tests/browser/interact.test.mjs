// The timeline's interactions on the demo run: Perfetto's WASD keys on the focused canvas, the
// hover tooltip with every enriched field (the same as the details panel's for that kernel, and
// without selecting it), the minimap of the whole run, box selection with its aggregate (the same
// as the visible window's once zoomed to it), and the ruler's adaptive units.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, timelineBox, frames, DEMO, openDemo } from './harness.mjs';


let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

const PLOT_X = 180; // the canvas' label column
let PLOT_W = 1020; // its plot: the canvas is as wide as its box (measured once the demo is drawn)

async function loadDemo(page) {
  await openDemo(page, s.url);
  PLOT_W = (await timelineBox(page)).plotW;
}

const windowOf = async (page) => (await page.getByTestId('timeline').getAttribute('data-window')).split('_').map(Number);

/** Waits for the canvas' window to differ from `before`; returns the new one. */
async function nextWindow(page, before) {
  await page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window !== w,
    before.join('_'));
  return windowOf(page);
}

/**
 * Page coordinates of canvas pixel (x, y), the canvas scrolled into view first; y as the rows
 * were before they were grouped by node (20 px of ruler, a 22 px row per track).
 */
async function at(page, x, y) {
  const g = await timelineBox(page);
  return [g.box.x + x * g.scale, g.box.y + g.canvasY(y) * g.scale];
}

test('the focused canvas zooms with W/S and pans with A/D, smoothly while held', async () => {
  await withScreenshot(s.page, 'interact-keys', async () => {
    const page = s.page;
    await loadDemo(page);
    const canvas = page.getByTestId('timeline');
    assert.equal(await canvas.getAttribute('tabindex'), '0');
    assert.match(await canvas.getAttribute('aria-label'), /W and S zoom/);
    const whole = await windowOf(page);
    await page.mouse.move(1, 1); // off the canvas: keys zoom around the centre
    await canvas.focus();
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'timeline');
    assert.notEqual(await canvas.evaluate((c) => getComputedStyle(c).outlineStyle), 'none', 'a visible focus ring');

    let w = await windowOf(page);
    await page.keyboard.press('w');
    let z = await nextWindow(page, w);
    assert.ok(z[1] - z[0] < w[1] - w[0], `W zooms in: ${w} → ${z}`);
    assert.ok(Math.abs((z[0] + z[1]) / 2 - (w[0] + w[1]) / 2) <= 2, 'around the centre');

    w = z;
    await page.keyboard.press('s');
    z = await nextWindow(page, w);
    assert.ok(z[1] - z[0] > w[1] - w[0], `S zooms out: ${w} → ${z}`);

    // Three notches in: the whole run does not pan (panning stops at the run's ends).
    for (let i = 0; i < 3; i++) {
      w = z;
      await page.keyboard.press('w');
      z = await nextWindow(page, w);
    }

    w = z;
    await page.keyboard.press('d');
    z = await nextWindow(page, w);
    assert.ok(z[0] > w[0] && Math.abs((z[1] - z[0]) - (w[1] - w[0])) <= 2, `D pans right: ${w} → ${z}`);
    const tap = z[0] - w[0];

    w = z;
    await page.keyboard.press('a');
    z = await nextWindow(page, w);
    assert.ok(z[0] < w[0], `A pans left: ${w} → ${z}`);

    // Held, D keeps panning frame after frame, and stops on release.
    w = z;
    await page.keyboard.down('d');
    await page.waitForTimeout(400);
    await page.keyboard.up('d');
    const held = await windowOf(page);
    assert.ok(held[0] - w[0] > 2 * tap, `held D moved ${held[0] - w[0]} ns, a tap ${tap}`);
    await page.waitForTimeout(200);
    assert.deepEqual(await windowOf(page), held, 'stopped on keyup');

    // With the mouse over the plot, W zooms around the time under it.
    w = held;
    const frac = 0.25;
    await page.mouse.move(...await at(page, PLOT_X + PLOT_W * frac, 40));
    await page.keyboard.press('w');
    z = await nextWindow(page, w);
    const pivot = (win) => win[0] + (win[1] - win[0]) * frac;
    assert.ok(z[1] - z[0] < w[1] - w[0]);
    assert.ok(Math.abs(pivot(z) - pivot(w)) < (w[1] - w[0]) / PLOT_W, `pivot ${pivot(w)} → ${pivot(z)}`);

    // Held long, D stops at the run's end (issue 30: panning ran past it), A at its start.
    for (const [key, atEnd] of [['d', (v) => v[1] <= whole[1] && whole[1] - v[1] < (v[1] - v[0]) / 100],
      ['a', (v) => v[0] >= whole[0] && v[0] - whole[0] < (v[1] - v[0]) / 100]]) {
      await page.keyboard.down(key);
      await page.waitForFunction(([k, w]) => {
        const v = document.querySelector('[data-testid=timeline]').dataset.window.split('_').map(Number);
        return k === 'd' ? v[1] >= w[1] - (v[1] - v[0]) / 100 : v[0] <= w[0] + (v[1] - v[0]) / 100;
      }, [key, whole], { timeout: 20_000 });
      await page.waitForTimeout(300);
      await page.keyboard.up(key);
      const v = await windowOf(page);
      assert.ok(atEnd(v), `${key} held: ${v} within ${whole}`);
    }
    assert.deepEqual(s.errors, []);
  });
});

test('hovering a kernel shows every enriched field without selecting it; leaving hides it', async () => {
  await withScreenshot(s.page, 'interact-hover', async () => {
    const page = s.page;
    await loadDemo(page);
    const tooltip = page.getByTestId('tooltip');
    let point;
    for (let i = 1; i < 60 && !point; i++) {
      const p = await at(page, PLOT_X + (PLOT_W * i) / 60, 20 + 11);
      await page.mouse.move(...p);
      if (await tooltip.waitFor({ timeout: 1500 }).then(() => true, () => false)) point = p;
    }
    assert.ok(point, 'some kernel on row 0 shows a tooltip');
    const fields = () => page.locator('[data-testid=tooltip] [data-field-name]').evaluateAll((dds) =>
      dds.map((dd) => [dd.dataset.fieldName, dd.textContent]));
    const tip = Object.fromEntries(await fields());
    assert.match(await page.getByTestId('tooltip-title').textContent(), /rank 0 · [\d.]+ µs/);
    assert.equal(tip['Global Rank'], '0');
    for (const name of ['Op Count (Hex)', 'Element Count', 'Data Type', 'Message Size (Bytes)', 'NCCL Algorithm',
      'Protocol', 'Algo BW (GB/s)', 'Bus BW (GB/s)', 'Match', 'Confidence', 'Communicator Size', 'Efficiency']) {
      assert.ok(tip[name] !== undefined && tip[name] !== '', `tooltip has ${name}: ${JSON.stringify(tip)}`);
    }
    // Bandwidths in the unit their magnitude calls for (issue 30: no raw floats).
    assert.match(tip['Algo BW (GB/s)'], /^[\d.]+ (TB|GB|MB|KB|B)\/s$/);
    assert.ok(Number.parseFloat(tip['Algo BW (GB/s)']) > 0);
    assert.equal(await page.getByTestId('details').count(), 0, 'a hover selects nothing');
    // Text only: a field holding markup would show it, never make elements.
    assert.equal(await page.locator('[data-testid=tooltip] dd *').count(), 0);

    // A click at the same point picks the same kernel: the details panel lists the same fields.
    await page.mouse.click(...point);
    await page.waitForFunction(() => document.querySelector('[data-testid=detail-fields] [data-field-name]'));
    const details = await page.locator('[data-testid=detail-fields] [data-field-name]').evaluateAll((dds) =>
      dds.map((dd) => [dd.dataset.fieldName, dd.textContent]));
    // (The tooltip shows the headline fields, the details every field: the same values.)
    const all = Object.fromEntries(details);
    assert.deepEqual(Object.fromEntries(Object.keys(tip).map((k) => [k, all[k]])), tip);

    // Off the canvas, the tooltip goes. (The details drawer, open beside the canvas, narrows
    // it: closed, the kernel is back under the point.)
    await page.getByTestId('drawer-close').click();
    await page.getByTestId('drawer').waitFor({ state: 'detached' });
    await frames(page, 3);
    await page.mouse.move(point[0] + 1, point[1]);
    await page.mouse.move(...point);
    await tooltip.waitFor();
    await page.mouse.move(1, 1);
    await tooltip.waitFor({ state: 'detached' });

    // And during a drag.
    await page.mouse.move(...point);
    await tooltip.waitFor();
    await page.mouse.down();
    await page.mouse.move(point[0] + 40, point[1], { steps: 4 });
    await tooltip.waitFor({ state: 'detached' });
    await page.mouse.up();
    assert.deepEqual(s.errors, []);
  });
});

test('the minimap boxes the visible window and moves it on a click', async () => {
  await withScreenshot(s.page, 'interact-minimap', async () => {
    const page = s.page;
    await loadDemo(page);
    const minimap = page.getByTestId('minimap');
    const viewBox = async () => (await minimap.getAttribute('data-view-box')).split(' ').map(Number);
    const [x0, w0] = await viewBox();
    assert.ok(Math.abs(x0 - PLOT_X) < 1 && Math.abs(w0 - PLOT_W) < 1, `whole run: ${x0} ${w0}`);
    const run = await windowOf(page);

    // Five notches in (×0.8 each): the box is the window's share of the run.
    await page.mouse.move(...await at(page, PLOT_X + PLOT_W / 2, 40));
    let w = run;
    for (let i = 0; i < 5; i++) {
      await page.mouse.wheel(0, -200);
      w = await nextWindow(page, w);
    }
    const [, w1] = await viewBox();
    const share = (w[1] - w[0]) / (run[1] - run[0]);
    assert.ok(Math.abs(w1 - PLOT_W * share) < 2, `box ${w1} px for ${share} of the run`);
    assert.ok(w1 < w0 / 2);

    // A click at three quarters of the minimap centres the window there, at the same zoom.
    const box = await minimap.boundingBox();
    const scale = box.width / await minimap.evaluate((c) => c.width);
    await page.mouse.click(box.x + (PLOT_X + 0.75 * PLOT_W) * scale, box.y + box.height / 2);
    const moved = await nextWindow(page, w);
    const target = run[0] + 0.75 * (run[1] - run[0]);
    const tolerance = (2 * (run[1] - run[0])) / PLOT_W / scale; // a CSS pixel's rounding
    assert.ok(Math.abs((moved[0] + moved[1]) / 2 - target) < tolerance, `${moved} centred on ${target}`);
    assert.ok(Math.abs((moved[1] - moved[0]) - (w[1] - w[0])) <= 2);
    const [x2] = await viewBox();
    assert.ok(Math.abs(x2 + w1 / 2 - (PLOT_X + 0.75 * PLOT_W)) < 2, `box now at ${x2}`);
    assert.deepEqual(s.errors, []);
  });
});

/** The rows of one of the window aggregate's tables, as [key, kernels, bytes]. */
const table = (page, what) => page.locator(`[data-testid=window-${what}] tbody tr`).evaluateAll((trs) =>
  trs.map((tr) => [tr.dataset.key, tr.querySelector('[data-col=kernels]').textContent,
    tr.querySelector('[data-col=bytes]').textContent]));

test('shift+drag selects a range whose aggregate is the visible window\'s once zoomed to it', async () => {
  await withScreenshot(s.page, 'interact-select', async () => {
    const page = s.page;
    await loadDemo(page);
    const canvas = page.getByTestId('timeline');
    const run = await windowOf(page);
    await page.keyboard.down('Shift');
    await page.mouse.move(...await at(page, PLOT_X + PLOT_W * 0.3, 40));
    await page.mouse.down();
    await page.mouse.move(...await at(page, PLOT_X + PLOT_W * 0.6, 60), { steps: 6 });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline]').dataset.selection);
    const sel = (await canvas.getAttribute('data-selection')).split('_').map(Number);
    const px = (run[1] - run[0]) / PLOT_W;
    assert.ok(Math.abs(sel[0] - (run[0] + 0.3 * (run[1] - run[0]))) < 2 * px, `selection ${sel} in ${run} now ${await windowOf(page)}`);
    assert.ok(Math.abs(sel[1] - (run[0] + 0.6 * (run[1] - run[0]))) < 2 * px, `selection ${sel} in ${run}`);
    assert.deepEqual(await windowOf(page), run, 'a selection does not pan');

    const scope = page.getByTestId('window-scope');
    await scope.filter({ hasText: /^selection / }).waitFor();
    const [a, b] = /selection ([\d.]+)–([\d.]+) ms/.exec(await scope.textContent()).slice(1).map(Number);
    assert.ok(Math.abs(a - (sel[0] - run[0]) / 1e6) < 0.001 && Math.abs(b - (sel[1] - run[0]) / 1e6) < 0.001,
      `heading ${a}–${b} for ${sel}`);
    const perOp = await table(page, 'operation');
    const perRank = await table(page, 'rank');
    assert.ok(perOp.length >= 1 && perRank.length >= 2);
    const kernels = perOp.reduce((n, r) => n + Number(r[1]), 0);
    assert.ok(kernels > 0);
    assert.equal(perRank.reduce((n, r) => n + Number(r[1]), 0), kernels, 'per rank sums as per operation');

    // F zooms to the selection; the visible window's aggregate is then the same.
    await canvas.focus();
    await page.keyboard.press('f');
    await nextWindow(page, run);
    assert.deepEqual(await windowOf(page), sel);
    await page.getByTestId('aggregate-window').click();
    await scope.filter({ hasText: /^visible window / }).waitFor();
    assert.deepEqual(await table(page, 'operation'), perOp);
    assert.deepEqual(await table(page, 'rank'), perRank);

    // Escape clears the selection.
    await canvas.focus();
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('[data-testid=timeline]').dataset.selection);

    // A drag on the ruler selects too, without shift.
    await page.mouse.move(...await at(page, PLOT_X + PLOT_W * 0.2, 10));
    await page.mouse.down();
    await page.mouse.move(...await at(page, PLOT_X + PLOT_W * 0.5, 10), { steps: 4 });
    await page.mouse.up();
    const ruled = (await canvas.getAttribute('data-selection')).split('_').map(Number);
    const now = await windowOf(page);
    assert.ok(ruled[1] > ruled[0] && ruled[0] >= now[0] && ruled[1] <= now[1], `ruler selection ${ruled}`);
    assert.deepEqual(s.errors, []);
  });
});

test('the time ruler has round ticks in units that follow the zoom', async () => {
  await withScreenshot(s.page, 'interact-ruler', async () => {
    const page = s.page;
    await loadDemo(page);
    const ticks = async () => (await page.getByTestId('timeline').getAttribute('data-ticks')).split('|');
    const whole = await ticks();
    assert.ok(whole.length >= 4 && whole.length <= 11, whole.join(' '));
    assert.equal(whole[0].split(' ')[0] * 1, 0, `starts at the run's start: ${whole[0]}`);
    const unit = (l) => l.split(' ')[1];
    assert.equal(new Set(whole.map(unit)).size, 1, 'one unit per ruler');

    // Far in: the ticks are much finer, still distinct, with evenly spaced values.
    await page.mouse.move(...await at(page, PLOT_X + PLOT_W / 3, 40));
    let w = await windowOf(page);
    for (let i = 0; i < 30; i++) await page.mouse.wheel(0, -200);
    w = await nextWindow(page, w);
    await page.waitForTimeout(100);
    const deep = await ticks();
    assert.ok(deep.length >= 4, deep.join(' '));
    assert.equal(new Set(deep).size, deep.length, `distinct: ${deep.join(' ')}`);
    const values = deep.map((l) => Number(l.split(' ')[0]));
    const steps = values.slice(1).map((v, i) => v - values[i]);
    assert.ok(steps.every((d) => Math.abs(d - steps[0]) < 1e-6 * Math.max(1, Math.abs(values[0]))), steps.join(' '));
    const toNs = { ns: 1, 'µs': 1e3, ms: 1e6, s: 1e9 };
    const stepNs = steps[0] * toNs[unit(deep[0])];
    assert.ok(stepNs > 0 && stepNs <= (w[1] - w[0]) / 4 * 1.001, `step ${stepNs} ns in a ${w[1] - w[0]} ns window`);
    assert.ok(/^[125]0*$/.test(String(Math.round(stepNs))), `round step ${stepNs}`);
    assert.deepEqual(s.errors, []);
  });
});

test('without log lines a hovered kernel still names its operation, track and duration', async () => {
  await withScreenshot(s.page, 'interact-hover-exports-only', async () => {
    const page = s.page;
    await page.goto(s.url);
    await page.getByTestId('load-demo').waitFor();
    const exports = fs.readdirSync(DEMO).filter((f) => f.endsWith('.sqlite')).map((f) => path.join(DEMO, f));
    assert.ok(exports.length >= 1);
    await page.getByTestId('file-input').setInputFiles(exports);
    await page.waitForFunction(() => document.querySelector('.page[data-analysis-ms]')
      && document.querySelector('[data-testid=timeline]')?.dataset.window, null, { timeout: 120_000 });
    const tooltip = page.getByTestId('tooltip');
    let shown = false;
    for (let i = 1; i < 60 && !shown; i++) {
      await page.mouse.move(...await at(page, PLOT_X + (PLOT_W * i) / 60, 20 + 11));
      shown = await tooltip.waitFor({ timeout: 1500 }).then(() => true, () => false);
    }
    assert.ok(shown, 'some kernel on row 0 shows a tooltip');
    assert.match(await page.getByTestId('tooltip-title').textContent(), /^\S+ · .+ · [\d.]+ µs · no log line matched$/);
    assert.equal(await page.locator('[data-testid=tooltip] [data-field-name]').count(), 0);
    assert.deepEqual(s.errors, []);
  });
});
