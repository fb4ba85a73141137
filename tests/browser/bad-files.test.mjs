// Bad files dropped together with good ones: each bad file gets a clear message naming it, the
// loading worker survives (sql.js errors are caught in it), and the good files still load with
// the native command's counts. The same with the logs parsed and the exports read on helper
// workers (`?parse-workers=3`): where a file is loaded changes no message, and a bad export read
// on a helper is the file's error, not the helper's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, nativeSummary, fact, openView, FIXTURES } from './harness.mjs';
import { makeBadFiles, writeLateLog } from './badfiles.mjs';

const haveFixtures = fs.existsSync(path.join(FIXTURES, 'nsys'));

let s;
let bad;
before(async () => {
  s = await startSession();
  if (haveFixtures) bad = makeBadFiles();
});
after(async () => {
  await s?.close();
  if (bad) fs.rmSync(bad.dir, { recursive: true, force: true });
});

/** The status cell of a file's row once it has loaded or failed. */
async function status(page, name) {
  await openView(page, 'inputs');
  const cell = page.locator(`[data-testid=file-row][data-file="${name}"] [data-testid=status]`);
  await cell.filter({ hasText: /^(loaded|error)/ }).waitFor({ timeout: 60_000 });
  return (await cell.textContent()).trim();
}

for (const query of ['', '?parse-workers=3']) test(`bad exports and logs are reported by name, the good files beside them still load${query && ` (${query})`}`, { skip: !haveFixtures }, async () => {
  const goodExport = path.join(FIXTURES, 'nsys', 'GindaChen-nsys-ai_mfu_2gpu_before.sqlite');
  const goodLog = path.join(FIXTURES, 'nccl', 'pytorch-torchtitan_issue1369_tp-collectives_coll-2ranks.log');
  const laterLog = path.join(FIXTURES, 'nccl', 'NVIDIA-nccl_issue584_send-recv-hang_coll-2ranks.log');
  const lateFixture = path.join(FIXTURES, 'nccl', 'NVIDIA-nccl_issue147_ddp-broadcast-hang_coll-interleaved-8ranks.log');
  await withScreenshot(s.page, `bad-files${query ? '-parse-workers' : ''}`, async () => {
    await s.page.goto(`${s.url}${query}`);
    // A log whose first NCCL line follows 200 KiB of other output loads whole.
    const lateLog = writeLateLog(bad.dir, lateFixture);
    // Good files first and last, so a worker that died on a bad one would leave the last unloaded.
    const mixed = [goodExport, ...bad.files.map((f) => f.path), lateLog, goodLog];
    await dropFiles(s.page, mixed);
    // Notes past a file's first page come from the worker, which answers once the analysis
    // of the drop is done: wait for it, so a loaded machine's slow analysis is not a failure.
    await s.page.getByTestId('analysis-status').filter({ hasText: /^Analysed in/ }).waitFor({ timeout: 120_000 });

    for (const { path: p, expect } of bad.files) {
      const name = path.basename(p);
      const text = await status(s.page, name);
      console.log(`${name}: ${text}`);
      if (expect === 'error') {
        assert.match(text, /^error: /, `${name}: ${text}`);
        assert.ok(text.includes(name), `${name}: the message names the file: ${text}`);
        assert.doesNotMatch(text, /loading worker/, `${name}: the worker survived: ${text}`);
      } else {
        assert.match(text, /^loaded, [1-9]\d* notes/, `${name}: ${text}`);
        // The row sums its notes up per reason; the notes panel lists them with the file's name.
        const row = s.page.locator(`[data-testid=file-row][data-file="${name}"]`);
        assert.match(await row.getByTestId('note-summary').textContent(), expect);
        await row.getByTestId('show-notes').click();
        await s.page.locator('[data-testid=notes-list] [data-testid=note-row]')
          .filter({ has: s.page.locator('.note-file', { hasText: name }) })
          .filter({ has: s.page.locator('.note-reason', { hasText: expect }) })
          .first().waitFor({ timeout: 30_000 });
      }
    }

    // Text that is not a log is refused with the message of any other unknown file.
    const refusal = async (name) => (await status(s.page, name)).replace(`${name}: `, '');
    assert.equal(await refusal('pip-output.txt'), await refusal('junk.log'));

    if (query) {
      // Every log and export, good or bad, and the text files (read as logs, in case a late
      // line is NCCL output) was loaded on a helper (binary files that are neither are refused
      // before): none was handed back to the loading worker.
      const line = s.page.getByTestId('analysis-status');
      await line.filter({ hasText: /^Analysed in/ }).waitFor({ timeout: 60_000 });
      const read = (await line.textContent()).match(/\((\d+) of (\d+) files read on [1-3] workers?\)/);
      assert.ok(read, await line.textContent());
      assert.equal(read[1], read[2], await line.textContent());
      assert.ok(+read[2] >= 3, `${read[2]} files to load on helpers`);
    }

    const nativeExport = nativeSummary([goodExport]).inputs[0];
    assert.equal(Number(await fact(s.page, path.basename(goodExport), 'NCCL kernels')), nativeExport.nccl_kernels);
    const nativeLog = nativeSummary([goodLog]).inputs[0];
    assert.equal(Number(await fact(s.page, path.basename(goodLog), 'NCCL operations')), nativeLog.nccl_ops);
    const late = path.basename(lateLog);
    const nativeLate = nativeSummary([lateFixture]).inputs[0];
    assert.ok(nativeLate.nccl_ops > 0);
    assert.match(await status(s.page, late), /^loaded/);
    assert.equal(Number(await fact(s.page, late, 'NCCL operations')), nativeLate.nccl_ops);
    assert.equal(nativeSummary([lateLog]).inputs[0].nccl_ops, nativeLate.nccl_ops);

    // The same worker serves a later drop.
    await dropFiles(s.page, [laterLog]);
    const nativeLater = nativeSummary([laterLog]).inputs[0];
    assert.equal(Number(await fact(s.page, path.basename(laterLog), 'NCCL operations')), nativeLater.nccl_ops);
    assert.deepEqual(s.errors, []);
  });
});
