// Adding a file later re-runs only what depends on it (issue 9): the demo run dropped in two
// parts (the combined log with node01's export, then node02's export) re-aligns only node02's
// four processes the second time, says so in the analysis status line, and ends with the same
// rank table as the same files dropped at once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSession, withScreenshot, dropFiles, demoFiles, rankTable, openView } from './harness.mjs';



/** Waits for the status line of the analysis to match `re`; returns its text. */
async function status(page, re) {
  const line = page.getByTestId('analysis-status');
  await line.filter({ hasText: re }).waitFor({ timeout: 60_000 });
  return line.textContent();
}

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

test('a second drop re-aligns only the processes its files bring', async () => {
  const files = demoFiles();
  const log = files.filter((f) => f.endsWith('.log'));
  const [node01, node02] = ['report_node01.sqlite', 'report_node02.sqlite'].map((n) => files.find((f) => f.endsWith(n)));
  assert.equal(log.length, 1, 'the demo has one combined log');
  assert.ok(node01 && node02, `the demo's exports: ${files}`);
  await withScreenshot(s.page, 'incremental', async () => {
    // Everything at once: the reference.
    await s.page.goto(s.url);
    await dropFiles(s.page, files);
    const whole = await status(s.page, /re-aligned 8 of 8 processes; rebuilt 8 of 8 timeline tracks/);
    assert.match(whole, /^Analysed in \d+ ms: /);
    const once = await rankTable(s.page);
    assert.equal(once.length, 8);

    // The same files in two drops.
    await s.page.goto(s.url);
    await dropFiles(s.page, [...log, node01]);
    await status(s.page, /re-aligned 4 of 4 processes/);
    await dropFiles(s.page, [node02]);
    const second = await status(s.page, /of 8 processes/);
    // node02's four processes are new; node01's keep their alignment (another export is another
    // clock, so no consensus couples them). Their tracks are rebuilt only if their clock
    // correction moved.
    assert.match(second, /re-aligned 4 of 8 processes; rebuilt [4-8] of 8 timeline tracks/);
    assert.doesNotMatch(second, /cross-rank/);
    assert.deepEqual(await rankTable(s.page), once, 'two drops end where one drop does');
    await openView(s.page, 'timeline');
    const tracks = s.page.getByTestId('timeline-summary');
    assert.match(await tracks.textContent(), /8 tracks/);
    assert.deepEqual(s.errors, []);
  });
});
