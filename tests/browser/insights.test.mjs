// The insights' views (Diagnosis, Steps, Patterns, Identity) against the native command's JSON
// for the same files: the page runs the same analyses in its worker, so every figure it shows
// must be the command's. A generated hang is named in the Diagnosis view as `analyze` names it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSession, withScreenshot, nativeSummary, openView, dropFiles, demoFiles, NATIVE_BIN, ROOT } from './harness.mjs';

let s;
before(async () => { s = await startSession(); });
after(async () => { await s.close(); });

/** The page with `files` dropped, once their analysis (and its insights) arrived. */
async function load(files) {
  await s.page.goto(s.url);
  await dropFiles(s.page, files);
  await openView(s.page, 'diagnosis');
  await s.page.getByTestId('diagnosis').waitFor({ timeout: 120_000 });
}

/** Every row of table `testId`: its cells' text. */
const rows = (testId) => s.page.locator(`[data-testid=${testId}] tbody tr`).evaluateAll(
  (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())));

test('the demo: each insight view shows what analyze says', async () => {
  const native = nativeSummary(demoFiles());
  await withScreenshot(s.page, 'insights-demo', async () => {
    await load(demoFiles());
    // Diagnosis: the same findings, in the same order.
    const kinds = await s.page.locator('[data-testid=diagnosis-finding]').evaluateAll(
      (trs) => trs.map((tr) => tr.dataset.kind));
    assert.deepEqual(kinds, native.diagnosis.map((f) => f.kind));
    const headline = await s.page.getByTestId('diagnosis-headline').textContent();
    if (native.diagnosis.length) assert.equal(headline.trim(), native.diagnosis[0].message);
    else assert.match(headline, /Nothing went wrong/);

    // Identity: one row per rank, each paired with the confidence analyze gives it.
    await openView(s.page, 'identity');
    const ids = await rows('identity-table');
    assert.equal(ids.length, native.ranks.length);
    for (const r of native.ranks) {
      const row = ids.find((cells) => cells[0] === String(r.global_rank));
      assert.ok(row, `rank ${r.global_rank} listed`);
      assert.equal(row[5], `${Math.round(r.identity.confidence * 100)} %`);
    }

    // Patterns: the heat map (a canvas) has a cell per pair that moved bytes, and the largest
    // pair is the command's largest (its matrix summed over parallelisms and operations).
    await openView(s.page, 'patterns');
    const cells = Number(await s.page.locator('[data-testid=patterns-heatmap][data-mode=observed]').getAttribute('data-cells'));
    const pairs = new Map();
    for (const e of native.comm_matrix) {
      const k = `${e.src}>${e.dst}`;
      pairs.set(k, (pairs.get(k) || 0) + e.bytes);
    }
    assert.equal(cells, pairs.size);
    const [top] = [...pairs.entries()].sort((a, b) => b[1] - a[1]);
    const first = (await rows('patterns-pairs'))[0];
    assert.equal(`${first[0]}>${first[1]}`, top[0]);

    // Steps: as many steps as the command found (up to the 200 the page lists).
    if (native.steps) {
      await openView(s.page, 'steps');
      const steps = await rows('steps-per-step');
      assert.equal(steps.length, Math.min(200, native.steps.per_step.length));
      assert.ok((await s.page.getByTestId('steps-headline').textContent()).length > 0);
      // One bar per step listed, each segment a stage's advance.
      assert.equal(await s.page.locator('[data-testid=steps-frontier-chart] svg > g').count(), steps.length);
    }
  });
});

test('a generated hang is named in the Diagnosis view', async () => {
  nativeSummary(demoFiles()); // builds the native command once
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-hang-'));
  execFileSync(NATIVE_BIN, ['synth', '--layout', 'tp=2,dp=2', '--hang', '3:12', '--out', dir], { cwd: ROOT });
  const files = fs.readdirSync(dir).filter((f) => /\.(log|sqlite)$/.test(f)).map((f) => path.join(dir, f));
  try {
    await withScreenshot(s.page, 'insights-hang', async () => {
      await load(files);
      const first = s.page.locator('[data-testid=diagnosis-finding]').first();
      assert.equal(await first.getAttribute('data-kind'), 'behind');
      assert.equal((await first.locator('td').nth(2).textContent()).trim(), '3');
      // The overview leads with it, a click away from the Diagnosis view.
      await openView(s.page, 'overview');
      // (Marked when analyze calls the first finding critical or a warning.)
      const severe = ['critical', 'warning'].includes(nativeSummary(files).diagnosis[0].severity);
      const card = s.page.getByTestId('overview-diagnosis');
      assert.equal(/\bwarn\b/.test(await card.getAttribute('class')), severe);
      assert.equal((await card.locator('button[data-go]').textContent()).startsWith(
        nativeSummary(files).diagnosis[0].message), true);
      await card.locator('button[data-go]').click();
      await s.page.locator('[data-testid=view][data-view="diagnosis"]').waitFor();
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
