// The loading worker starts with the page and, while the page waits for files, parses, reads and
// analyses the built-in demo run in a session of its own (issue 11: the first drop's code was
// cold, 1 s of the 8-rank target run). What it did must never show: after the warm-up, a drop
// shows the dropped files alone, with the native command's figures; a drop during it too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, nativeSummary, allRows, openView, FIXTURES } from './harness.mjs';

const FIXTURE = path.join(FIXTURES, 'nccl/NVIDIA-nccl-tests_issue350_gather_2.16.5_2node.log');
const haveFixture = fs.existsSync(FIXTURE);
if (!haveFixture) console.log(`# real fixtures absent at ${FIXTURES}: skipping the warm-up tests`);

/** Every rank row: its rank and each operation's count. */
const rankRows = (page) => allRows(page, 'rank-table', (trs) => trs.map((tr) => ({
  rank: Number(tr.dataset.rank),
  ops: Object.fromEntries([...tr.querySelectorAll('[data-op]')]
    .map((e) => [e.dataset.op, Number(e.querySelector('b').textContent.split(' ')[0])])),
})), (r) => r.rank);

/** Drops the fixture log and checks the page shows it alone, as the command reads it. */
async function dropAndCheck(page, native) {
  await dropFiles(page, [FIXTURE]);
  await page.locator('.page[data-analysis-ms]').waitFor({ state: 'attached', timeout: 60_000 });
  await openView(page, 'inputs');
  const files = await page.getByTestId('file-row').evaluateAll((rows) => rows.map((r) => r.dataset.file));
  assert.deepEqual(files, [path.basename(FIXTURE)], 'the file list holds the dropped file alone');
  const rows = await rankRows(page);
  assert.deepEqual(rows.map((r) => r.rank).sort((a, b) => a - b),
    native.ranks.map((r) => r.global_rank).sort((a, b) => a - b), 'the ranks of the dropped log alone');
  for (const r of native.ranks) {
    const want = Object.fromEntries(Object.entries(r.ops_by_type).filter(([, n]) => n > 0));
    assert.deepEqual(rows.find((x) => x.rank === r.global_rank).ops, want, `rank ${r.global_rank} operations`);
  }
  await openView(page, 'communicators');
  await page.getByTestId('comm-row').first().waitFor();
  const comms = await page.getByTestId('comm-row').count();
  assert.equal(comms, native.communicators.length, 'the dropped log\'s communicators alone');
}

test('the worker warms up on the demo without the page seeing it, and a later drop shows its files alone', { skip: !haveFixture }, async () => {
  const native = nativeSummary([FIXTURE]);
  const s = await startSession();
  try {
    await withScreenshot(s.page, 'warm-up-after', async () => {
      await s.page.goto(s.url);
      // The warm-up reports its end; nothing of it reaches the file list or the analysis.
      await s.page.locator('.page[data-worker-warm-ms]').waitFor({ state: 'attached', timeout: 30_000 });
      const ms = Number(await s.page.locator('.page').getAttribute('data-worker-warm-ms'));
      assert.ok(ms > 0, `the warm-up took ${ms} ms`);
      assert.equal(await s.page.getByTestId('file-row').count(), 0, 'no file row before a drop');
      assert.equal(await s.page.getByTestId('view-bar').count(), 0, 'no file loaded before a drop');
      assert.equal(await s.page.locator('.page[data-analysis-ms]').count(), 0, 'no analysis before a drop');
      await dropAndCheck(s.page, native);
      assert.deepEqual(s.errors, []);
    });
  } finally {
    await s.close();
  }
});

test('a drop as soon as the page opens (the warm-up under way, or cut short) loads as well', { skip: !haveFixture }, async () => {
  const native = nativeSummary([FIXTURE]);
  const s = await startSession();
  try {
    await withScreenshot(s.page, 'warm-up-during', async () => {
      await s.page.goto(s.url);
      await dropAndCheck(s.page, native);
      // The warm-up ended (cut short by the drop, or done before it) and said so.
      await s.page.locator('.page[data-worker-warm-ms]').waitFor({ state: 'attached', timeout: 30_000 });
      assert.deepEqual(s.errors, []);
    });
  } finally {
    await s.close();
  }
});
