// The page's first-day guarantees, in a real Chromium: it loads cleanly, sql.js comes from the
// page's own origin, real fixtures dropped in report the same counts as the native command, the
// demo run shows a timeline, and no request ever leaves the page's origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, nativeSummary, fact, openView, FIXTURES } from './harness.mjs';

const haveFixtures = fs.existsSync(path.join(FIXTURES, 'nsys'));
if (!haveFixtures) console.log(`notice: real fixtures not found at ${FIXTURES}; fixture tests skipped`);

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

test('page loads with no console errors and shows how to start', async () => {
  const warnings = [];
  s.page.on('console', (m) => { if (m.type() === 'warning') warnings.push(m.text()); });
  await withScreenshot(s.page, 'page-loads', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('empty-state').waitFor();
    assert.match(await s.page.getByTestId('empty-state').textContent(), /NCCL_DEBUG=INFO/);
    // Its wasm (the page's, the workers') starts the current way: no wasm-bindgen deprecation
    // warning (issue 30: three at every load). The workers have started once they warmed up.
    await s.page.locator('.page[data-worker-warm-ms]').waitFor({ state: 'attached', timeout: 30_000 });
    assert.deepEqual(warnings.filter((w) => /deprecated/.test(w)), []);
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
    // The per-rank table agrees with the command's `ranks`, operation type by type.
    const ranks = nativeSummary([f]).ranks;
    await openView(s.page, 'ranks');
    await s.page.getByTestId('rank-table').waitFor();
    assert.equal(await s.page.getByTestId('rank-row').count(), ranks.length);
    for (const r of ranks) {
      const row = s.page.locator(`[data-testid=rank-row][data-rank="${r.global_rank}"]`);
      for (const [op, n] of Object.entries(r.ops_by_type).filter(([, n]) => n > 0)) {
        const shown = await row.locator(`[data-op="${op}"] b`).textContent();
        assert.equal(Number(shown.split(' ')[0]), n, `rank ${r.global_rank} ${op}`);
      }
    }
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
    // Every rank of the demo has most of its kernels matched to log operations.
    await openView(s.page, 'ranks');
    const rows = s.page.getByTestId('rank-row');
    await rows.first().waitFor();
    assert.equal(await rows.count(), Number(tracks));
    const matchedShown = await rows.getByTestId('matched').allTextContents();
    // The layout is inferred from the trace: the demo is TP=2 × DP=2 × PP=2.
    await openView(s.page, 'communicators');
    await s.page.getByTestId('layout').filter({ hasText: /TP=2 CP=1 EP=1 DP=2 PP=2/ }).waitFor();
    const labels = new Set(await s.page.getByTestId('comm-row').getByTestId('parallelism').allTextContents());
    for (const p of ['TP', 'DP', 'PP']) assert.ok(labels.has(p), `a ${p} communicator among ${[...labels]}`);
    for (const text of matchedShown) {
      const [matched, kernels] = text.split(' / ').map(Number);
      assert.ok(kernels > 0 && matched / kernels > 0.8, `matched ${text}`);
    }
    assert.deepEqual(s.errors, []);
  });
});

test('markup in a log is shown as text, never run', async () => {
  const hostile = '<img src=x onerror=alert(1)>';
  const line = `${hostile}:12:34 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x2 [nranks=2] stream 0x3\n`
    + `host<b>x</b>:5:6 [0] NCCL INFO Broadcast: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 root 0 comm 0x2 [nranks=2] stream 0x3\n`;
  const dialogs = [];
  s.page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await withScreenshot(s.page, 'hostile', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('file-input').setInputFiles([{ name: '<script>x</script>.log', mimeType: 'text/plain', buffer: Buffer.from(line) }]);
    await openView(s.page, 'inputs');
    await s.page.getByTestId('file-row').locator('[data-testid=status]').filter({ hasText: /^(loaded|error)/ }).waitFor();
    await s.page.waitForTimeout(500);
    assert.deepEqual(dialogs, []);
    assert.equal(await s.page.locator('img, script:not([src]):not([type])').evaluateAll((els) => els.filter((e) => e.closest('.page')).length), 0);
    assert.ok((await s.page.locator('.page').textContent()).includes('<script>x</script>.log'), 'the name is shown as text');
  });
});

test('no request ever left the page origin', async () => {
  assert.ok(s.requests.length > 0);
  const foreign = s.requests.filter((u) => !u.startsWith(`${s.origin}/`) && !u.startsWith('blob:') && !u.startsWith('data:'));
  assert.deepEqual(foreign, []);
});
