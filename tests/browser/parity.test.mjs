// The page reads every real fixture into exactly the records the native command reads: sql.js
// (in Chromium) against rusqlite for the exports, the parser compiled to wasm against the native
// one for the logs. Compared through each input's records digest (every field of every record).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, nativeSummary, allRows, FIXTURES } from './harness.mjs';

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
      // The file list shows only the rows its scroll box holds: read them all, until every
      // file has its final status.
      const readRows = () => allRows(s.page, 'file-list', (trs) => trs.map((tr) => ({
        file: tr.dataset.file,
        status: tr.querySelector('[data-testid=status]')?.textContent ?? '',
        kind: tr.querySelector('[data-testid=kind]')?.textContent ?? null,
        digest: tr.querySelector('[data-testid=digest]')?.textContent.trim() ?? null,
      })), (r) => r.file);
      let shown = [];
      for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
        shown = await readRows();
        if (shown.length === files.length && shown.every((r) => /^(loaded|error)/.test(r.status))) break;
        await new Promise((r) => { setTimeout(r, 500); });
      }
      assert.equal(shown.length, files.length, 'a row per file');
      const byName = new Map(shown.map((r) => [r.file, r]));
      for (let i = 0; i < files.length; i++) {
        const name = path.basename(files[i]);
        const row = byName.get(name);
        assert.match(row.status, /^(loaded|error)/, `${name}: status`);
        assert.equal(row.kind, native[i].kind, `${name}: kind`);
        if (native[i].records_digest === undefined) {
          // Unusable natively (no records at all): unusable in the page too.
          assert.equal(row.digest, null, `${name}: no records`);
          continue;
        }
        assert.equal(row.digest, native[i].records_digest, `${name}: page vs native records`);
      }
      assert.deepEqual(s.errors, []);
    });
  });
}
