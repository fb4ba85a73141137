// The Steps view on a generated run with compute kernels and a known delay: its iteration-time
// breakdown is the command's (the page's workers read the compute kernels as `analyze` does),
// the worst outlier opens on the timeline with its collective picked, and the view's state
// (θ, the mapping's edits, the step and rank picked) travels in a share link.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSession, withScreenshot, nativeSummary, openView, dropFiles, NATIVE_BIN, ROOT } from './harness.mjs';

let s;
let dir;
let files;
before(async () => {
  s = await startSession();
  execFileSync('cargo', ['build', '-q', '-p', 'ncclscope-cli'], { cwd: ROOT, stdio: 'inherit' });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-steps-'));
  execFileSync(NATIVE_BIN, ['synth', '--layout', 'tp=2,dp=2', '--delay', '1:2:backward:20', '--out', dir], { cwd: ROOT });
  files = fs.readdirSync(dir).filter((f) => /\.(log|sqlite)$/.test(f)).map((f) => path.join(dir, f));
});
after(async () => {
  await s.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** `page` with the run dropped and its Steps view open, once the insights arrived. */
async function load(page, url = s.url) {
  await page.goto(url);
  await dropFiles(page, files);
  await openView(page, 'steps');
  await page.getByTestId('steps-headline').waitFor({ timeout: 120_000 });
}

const near = (a, b) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));

test('the page breaks the step time down as analyze does', async () => {
  const native = nativeSummary(files).steps;
  assert.ok(native?.breakdown, 'analyze gives a breakdown');
  await withScreenshot(s.page, 'steps-breakdown', async () => {
    await load(s.page);
    const rows = await s.page.locator('[data-testid=steps-breakdown] tr[data-term]').evaluateAll(
      (trs) => Object.fromEntries(trs.map((tr) => [tr.dataset.term, Number(tr.dataset.ms)])));
    const m = native.breakdown.mean;
    assert.ok(m.compute_ms > 0, 'the run has compute time');
    for (const [term, want] of [['step', m.step_ms], ['compute', m.compute_ms], ['bubble', m.bubble_ms], ['idle', m.idle_ms]]) {
      assert.ok(near(rows[term], want), `${term}: page ${rows[term]}, analyze ${want}`);
    }
    const exposed = Array.isArray(m.exposed_ms) ? Object.fromEntries(m.exposed_ms) : m.exposed_ms;
    for (const [p, want] of Object.entries(exposed)) {
      assert.ok(near(rows[`exposed-${p}`], want), `exposed ${p}: page ${rows[`exposed-${p}`]}, analyze ${want}`);
    }
    assert.deepEqual(s.errors, []);
  });
});

test('the worst outlier opens on the timeline, its collective picked', async () => {
  const native = nativeSummary(files).steps;
  const worst = native.baselines.worst[0];
  await withScreenshot(s.page, 'steps-outlier', async () => {
    await load(s.page);
    const open = s.page.getByTestId('steps-outlier-open').first();
    assert.equal(await open.getAttribute('data-sync-start'), String(worst.sync_start_ns));
    // Keyboard reachable: a button, focused and pressed.
    await open.focus();
    await s.page.keyboard.press('Enter');
    await s.page.locator('[data-testid=view][data-view="timeline"]').waitFor();
    const canvas = s.page.getByTestId('timeline');
    await s.page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window);
    const [a, b] = (await canvas.getAttribute('data-window')).split('_').map(Number);
    assert.ok(a <= worst.sync_start_ns && worst.sync_start_ns < b, `${worst.sync_start_ns} in ${a}_${b}`);
    if (worst.kind === 'nccl' && worst.op_count !== undefined) {
      await s.page.getByTestId('detail-instance').waitFor({ timeout: 60_000 });
      const line = await s.page.getByTestId('detail-instance').textContent();
      assert.match(line, new RegExp(`opCount ${worst.op_count.toString(16)}\\b`), line);
    }
  });
});

test('the Steps view state travels in a share link', async () => {
  let link;
  await withScreenshot(s.page, 'steps-link-make', async () => {
    await load(s.page);
    await s.page.locator('[data-testid=steps-settings] summary').click();
    await s.page.getByTestId('steps-theta').fill('0.75');
    await s.page.getByTestId('steps-stage-patterns').fill('backward=*backward*');
    await s.page.getByTestId('steps-apply').click();
    await s.page.locator('[data-testid=steps-theta-shown][data-theta="0.75"]').waitFor({ timeout: 60_000 });
    await s.page.locator('[data-testid=steps-step][data-step="2"]').click();
    await s.page.getByTestId('steps-rank').selectOption('1');
    await s.page.locator('[data-testid=steps-step-detail][data-step="2"]').waitFor();
    await s.page.getByTestId('copy-link').click();
    await s.page.getByTestId('share-link').waitFor({ timeout: 60_000 });
    link = await s.page.getByTestId('share-link').inputValue();
    assert.match(new URL(link).hash, /[#&]st=[^&]*th:0\.75/);
  });
  const b = await startSession();
  try {
    await withScreenshot(b.page, 'steps-link-restore', async () => {
      await load(b.page, b.url + new URL(link).hash);
      await b.page.getByTestId('link-restored').waitFor({ timeout: 120_000 });
      await b.page.locator('[data-testid=steps-theta-shown][data-theta="0.75"]').waitFor({ timeout: 60_000 });
      await b.page.locator('[data-testid=steps-step-detail][data-step="2"]').waitFor();
      assert.equal(await b.page.getByTestId('steps-rank').inputValue(), '1');
      assert.equal(await b.page.getByTestId('steps-theta').inputValue(), '0.75');
      assert.equal((await b.page.getByTestId('steps-stage-patterns').inputValue()).trim(), 'backward=*backward*');
      // Only rank 1's outliers are listed.
      const ranks = await b.page.locator('[data-testid=steps-outliers] tbody tr td:nth-child(2)').allTextContents();
      assert.ok(ranks.length > 0 && ranks.every((r) => r.trim() === '1'), ranks.join(','));
    });
  } finally {
    await b.close();
  }
});
