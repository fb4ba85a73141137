// The page's first-day guarantees, in a real Chromium: it loads cleanly, sql.js comes from the
// page's own origin, real fixtures dropped in report the same counts as the native command, the
// demo run shows a timeline, and no request ever leaves the page's origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, nativeSummary, fact, FIXTURES } from './harness.mjs';

const haveFixtures = fs.existsSync(path.join(FIXTURES, 'nsys'));
if (!haveFixtures) console.log(`notice: real fixtures not found at ${FIXTURES}; fixture tests skipped`);

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

test('page loads with no console errors and shows how to start', async () => {
  await withScreenshot(s.page, 'page-loads', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('empty-state').waitFor();
    assert.match(await s.page.getByTestId('empty-state').textContent(), /NCCL_DEBUG=INFO/);
    assert.deepEqual(s.errors, []);
  });
});

test('a real SQLite export, chosen with the file input, reports the native NCCL kernel count', { skip: !haveFixtures }, async () => {
  const files = ['GindaChen-nsys-ai_mfu_2gpu_before.sqlite', 'NVIDIA-Fuser_report1_8fa9ec29.sqlite']
    .map((f) => path.join(FIXTURES, 'nsys', f));
  await withScreenshot(s.page, 'sqlite-file-input', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('file-input').setInputFiles(files);
    for (const f of files) {
      const native = nativeSummary([f]).inputs[0];
      assert.equal(native.kind, 'nsys-sqlite');
      const shown = await fact(s.page, path.basename(f), 'NCCL kernels');
      assert.equal(Number(shown), native.nccl_kernels, `${path.basename(f)}: page vs native`);
    }
    // sql.js's wasm was fetched from the page's own origin.
    assert.ok(s.requests.some((u) => u === `${s.origin}/sql-wasm.wasm`), `requests: ${s.requests.join(' ')}`);
    assert.deepEqual(s.errors, []);
  });
});

test('a real NCCL log, dropped on the page, reports the native operation count', { skip: !haveFixtures }, async () => {
  const f = path.join(FIXTURES, 'nccl', 'pytorch-torchtitan_issue1369_tp-collectives_coll-2ranks.log');
  await withScreenshot(s.page, 'log-drop', async () => {
    await s.page.goto(s.url);
    await dropFiles(s.page, [f]);
    const native = nativeSummary([f]).inputs[0];
    assert.equal(native.kind, 'nccl-log');
    assert.ok(native.nccl_ops > 0);
    assert.equal(Number(await fact(s.page, path.basename(f), 'NCCL operations')), native.nccl_ops);
    assert.deepEqual(s.errors, []);
  });
});

test('the demo run opens a multi-rank timeline', async () => {
  await withScreenshot(s.page, 'demo', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').click();
    const summary = s.page.getByTestId('timeline-summary');
    await summary.filter({ hasText: /[1-9]\d* tracks, [1-9]\d* kernels/ }).waitFor({ timeout: 60_000 });
    const [, tracks] = (await summary.textContent()).match(/(\d+) tracks/);
    assert.ok(Number(tracks) >= 2, 'a multi-rank run has several tracks');
    assert.deepEqual(s.errors, []);
  });
});

test('no request ever left the page origin', async () => {
  assert.ok(s.requests.length > 0);
  const foreign = s.requests.filter((u) => !u.startsWith(`${s.origin}/`) && !u.startsWith('blob:') && !u.startsWith('data:'));
  assert.deepEqual(foreign, []);
});
