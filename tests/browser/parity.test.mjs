// The page reads every real fixture into exactly the records the native command reads: sql.js
// (in Chromium) against rusqlite for the exports, the parser compiled to wasm against the native
// one for the logs. Compared through each input's records digest (every field of every record).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, nativeSummary, FIXTURES } from './harness.mjs';

const haveFixtures = fs.existsSync(path.join(FIXTURES, 'nsys'));
const list = (dir) => (haveFixtures ? fs.readdirSync(path.join(FIXTURES, dir)).filter((f) => !f.endsWith('.md')).sort()
  .map((f) => path.join(FIXTURES, dir, f)) : []);

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

for (const kind of ['nsys', 'nccl']) {
  test(`every real ${kind} fixture gives the same records in the page as natively`, { skip: !haveFixtures }, async () => {
    const files = list(kind);
    assert.ok(files.length >= (kind === 'nsys' ? 6 : 20), `${files.length} fixtures`);
    // Same files, same order: file indices inside the records agree too.
    const native = nativeSummary(['--digest', ...files]).inputs;
    await withScreenshot(s.page, `parity-${kind}`, async () => {
      await s.page.goto(`${s.url}?digest`);
      await s.page.getByTestId('file-input').setInputFiles(files);
      const rows = s.page.getByTestId('file-row');
      await rows.nth(files.length - 1).locator('[data-testid=status]').filter({ hasText: /^(loaded|error)/ })
        .waitFor({ timeout: 120_000 });
      for (let i = 0; i < files.length; i++) {
        const name = path.basename(files[i]);
        const row = s.page.locator(`[data-testid=file-row][data-file="${name}"]`);
        assert.equal(await row.getByTestId('kind').textContent(), native[i].kind, `${name}: kind`);
        if (native[i].records_digest === undefined) {
          // Unusable natively (no records at all): unusable in the page too.
          assert.equal(await row.getByTestId('digest').count(), 0, `${name}: no records`);
          continue;
        }
        const digest = (await row.getByTestId('digest').textContent()).trim();
        assert.equal(digest, native[i].records_digest, `${name}: page vs native records`);
      }
      assert.deepEqual(s.errors, []);
    });
  });
}
