// The timeline's level of detail: zoomed far out, the tracks draw their summaries (buckets of at
// most a pixel) instead of every span; zoomed back in, the spans again; picking still works.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSession, withScreenshot, timelineBox, trackPoint } from './harness.mjs';

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

/** How the canvas' last frame was drawn, and its pixels. */
const frame = (page) => page.getByTestId('timeline').evaluate((c) => ({
  window: c.dataset.window,
  summaryTracks: Number(c.dataset.summaryTracks),
  rects: Number(c.dataset.rects),
  pixels: c.toDataURL(),
}));

async function wheel(page, notches) {
  const before = await page.getByTestId('timeline').getAttribute('data-window');
  for (let i = 0; i < Math.abs(notches); i++) await page.mouse.wheel(0, Math.sign(notches) * 200);
  await page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window !== w, before);
  // The frame is drawn in the effect that follows the window's change.
  await page.waitForTimeout(100);
}

test('zooming out draws summaries, zooming in draws spans, and picking still works', async () => {
  await withScreenshot(s.page, 'lod', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').click();
    await s.page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window,
      null, { timeout: 120_000 });
    const g = await timelineBox(s.page);
    const tracks = Number(/(\d+) tracks/.exec(await s.page.getByTestId('timeline-summary').textContent())[1]);
    assert.ok(tracks >= 2);

    await s.page.mouse.move(...await trackPoint(s.page, 0, 0.5));
    const whole = await frame(s.page);
    assert.equal(whole.summaryTracks, 0, 'the whole demo run is a few spans per pixel: drawn exactly');
    assert.ok(whole.rects > 0);

    // Eleven notches out (×1.25 each): the run is under a tenth of the plot, every span under a
    // pixel, so every track draws a summary level, a bounded number of rectangles.
    await wheel(s.page, 11);
    const out = await frame(s.page);
    assert.equal(out.summaryTracks, tracks, 'every track drawn from its summary');
    assert.ok(out.rects > 0 && out.rects <= tracks * g.plotW / 10 + tracks, `${out.rects} rectangles`);
    assert.notEqual(out.pixels, whole.pixels);

    // Back in, and two notches further: spans again.
    await wheel(s.page, -13);
    const zoomed = await frame(s.page);
    assert.equal(zoomed.summaryTracks, 0);
    assert.ok(zoomed.rects > 0);
    assert.notEqual(zoomed.pixels, out.pixels);

    // A click on row 0 still picks a kernel after the zooms.
    let picked = false;
    for (let i = 1; i < 60 && !picked; i++) {
      await s.page.mouse.click(...await trackPoint(s.page, 0, i / 60));
      picked = (await s.page.getByTestId('details').count()) > 0;
    }
    assert.ok(picked, 'some click picked a kernel');
    assert.deepEqual(s.errors, []);
  });
});
