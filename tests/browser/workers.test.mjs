// Alignment on several Web Workers (issues 6 and 11): the loading worker hands each process's
// alignment to helper workers. Where a process is aligned must not change the result: for the
// demo and two generator runs, the page's every enriched kernel (the kernels CSV) and the rank
// table with `?align-workers=3` equal those with `?align-workers=0` (everything in the loading
// worker), and the status line says how many helpers aligned. A helper that fails (a job cut
// short on purpose) changes nothing either.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSession, withScreenshot, dropFiles, ROOT, NATIVE_BIN, demoFiles, rankTable, download } from './harness.mjs';


const made = [];

/** A generator preset's run written by the native command; its logs and exports. */
function generated(preset) {
  execFileSync('cargo', ['build', '-q', '-p', 'ncclscope-cli'], { cwd: ROOT, stdio: 'inherit' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ncclscope-workers-${preset}-`));
  made.push(dir);
  execFileSync(NATIVE_BIN, ['synth', '--preset', preset, '--out', dir], { cwd: ROOT });
  return fs.readdirSync(dir).filter((f) => /\.(log|sqlite)$/.test(f)).sort().map((f) => path.join(dir, f));
}


/** Loads `files` with `?align-workers=n` (and `extra`); returns what the page shows of the analysis. */
async function analyse(s, files, n, extra = '') {
  await s.page.goto(`${s.url}?align-workers=${n}${extra}`);
  await dropFiles(s.page, files);
  const line = s.page.getByTestId('analysis-status');
  await line.filter({ hasText: /^Analysed in/ }).waitFor({ timeout: 120_000 });
  return { status: await line.textContent(), ranks: await rankTable(s.page), csv: (await download(s.page, 'download-csv')).bytes.toString('utf8') };
}

let s;
before(async () => { s = await startSession(); });
after(async () => {
  await s?.close();
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

for (const [name, files] of [['demo', demoFiles], ['tp2pp2', () => generated('tp2pp2')],
  ['align-bothdrop20', () => generated('align-bothdrop20')]]) {
  test(`${name}: three alignment workers give what the loading worker alone gives`, async () => {
    const inputs = files();
    await withScreenshot(s.page, `workers-${name}`, async () => {
      const alone = await analyse(s, inputs, 0);
      const helped = await analyse(s, inputs, 3);
      assert.match(alone.status, /\(aligned in \d+ ms\)$/);
      const processes = Number(alone.status.match(/of (\d+) processes/)[1]);
      assert.ok(processes >= 4, alone.status);
      // Each helper takes a job while there are jobs: three are used when there are three or more.
      assert.match(helped.status, /\(aligned in \d+ ms on 3 workers\)$/);
      assert.ok(alone.ranks.length >= 4);
      assert.deepEqual(helped.ranks, alone.ranks);
      const rows = alone.csv.trim().split('\n');
      assert.ok(rows.length > 100, `${name}: ${rows.length} CSV rows`);
      assert.ok(rows.some((r) => /allreduce|AllReduce/.test(r)), 'kernels carry their log operation');
      assert.equal(helped.csv, alone.csv, 'every enriched kernel is the same');
      assert.deepEqual(s.errors, []);
    });
  });
}

test('a helper that fails has its job aligned by the loading worker', async () => {
  const inputs = demoFiles();
  await withScreenshot(s.page, 'workers-fault', async () => {
    const alone = await analyse(s, inputs, 0);
    // `?align-fault` cuts the first job of each batch short: its helper answers that it cannot
    // read it, is stopped, and the loading worker aligns that process itself.
    const warnings = [];
    const onConsole = (m) => { if (m.type() === 'warning') warnings.push(m.text()); };
    s.page.on('console', onConsole);
    const faulty = await analyse(s, inputs, 3, '&align-fault');
    s.page.off('console', onConsole);
    // The helper said why (the page's console shows its workers' warnings). Processes are aligned
    // one clock domain at a time (the demo's two exports), each in two batches (both passes): each
    // batch's first job failed once.
    const failures = warnings.filter((w) => /^alignment worker \d+: job \d+: an alignment job that cannot be read/.test(w));
    assert.equal(failures.length, 4, warnings.join('\n'));
    // Helpers that had started before the batch ran out of jobs (on a loaded machine a late
    // one may get none, so the count is at most 3, not exactly 3).
    assert.match(faulty.status, /\(aligned in \d+ ms on [1-3] workers\)$/);
    assert.deepEqual(faulty.ranks, alone.ranks);
    assert.equal(faulty.csv, alone.csv, 'every enriched kernel is the same');
    // The helper's failure is reported on the console as a warning, never as a page error.
    assert.deepEqual(s.errors, []);
  });
});
