// The page reads every real fixture into exactly the records the native command reads: sql.js
// (in Chromium) against rusqlite for the exports, the parser compiled to wasm against the native
// one for the logs. Compared through each input's records digest (every field of every record).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSession, withScreenshot, nativeSummary, allRows, demoFiles, FIXTURES, ROOT } from './harness.mjs';

const haveFixtures = fs.existsSync(path.join(FIXTURES, 'nsys'));
const list = (dir) => (haveFixtures ? fs.readdirSync(path.join(FIXTURES, dir)).filter((f) => !f.endsWith('.md')).sort()
  .map((f) => path.join(FIXTURES, dir, f)) : []);

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

/** Loads `files` in the page and requires each one's records digest to equal the native one. */
async function sameRecordsAsNative(files, label) {
  // Same files, same order: file indices inside the records agree too.
  const native = nativeSummary(['--digest', ...files]).inputs;
  await withScreenshot(s.page, `parity-${label}`, async () => {
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
}

for (const kind of ['nsys', 'nccl']) {
  test(`every real ${kind} fixture gives the same records in the page as natively`, { skip: !haveFixtures }, async () => {
    const files = list(kind);
    assert.ok(files.length >= (kind === 'nsys' ? 6 : 20), `${files.length} fixtures`);
    await sameRecordsAsNative(files, kind);
  });
}

// The page's table scans read cells as JavaScript numbers (crates/ingest/sql-sqljs/js/sql-batch.js):
// an integer past 2^53 must send its row the exact (BigInt) way, ids packed past 2^53 come in
// halves, and cells of other types than their column's must come through as rusqlite gives them.
test('exports with integers past 2^53 and cells of every type give the same records in the page', { skip: !haveFixtures }, async () => {
  const initSqlJs = (await import(path.join(ROOT, 'node_modules/sql.js/dist/sql-wasm.js'))).default;
  const SQL = await initSqlJs({ locateFile: (f) => path.join(ROOT, 'node_modules/sql.js/dist', f) });
  const db = new SQL.Database(fs.readFileSync(path.join(FIXTURES, 'nsys', 'GindaChen-nsys-ai_mfu_2gpu_after.sqlite')));
  const kernels = 'CUPTI_ACTIVITY_KIND_KERNEL';
  db.run(`UPDATE ${kernels} SET start = start + 1152921504606846976, "end" = "end" + 1152921504606846976 WHERE rowid % 3 = 0`);
  db.run(`UPDATE ${kernels} SET localMemoryTotal = 'text' WHERE rowid % 5 = 1`);
  db.run(`UPDATE ${kernels} SET staticSharedMemory = 2.5 WHERE rowid % 7 = 2`);
  db.run(`UPDATE ${kernels} SET gridX = X'00ff' WHERE rowid % 11 = 3`);
  db.run(`UPDATE ${kernels} SET correlationId = NULL WHERE rowid % 13 = 4`);
  const [[wide, changed]] = db.exec(`SELECT sum(start > 9007199254740991), sum(typeof(localMemoryTotal) = 'text') FROM ${kernels}`)[0].values;
  assert.ok(wide > 100 && changed > 50, `${wide} rows past 2^53, ${changed} text cells`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-wide-'));
  try {
    const crafted = path.join(dir, 'wide-and-mixed.sqlite');
    fs.writeFileSync(crafted, db.export());
    db.close();
    // The generator packs a hardware id above the pid: every globalPid is past 2^53.
    const generated = demoFiles().filter((f) => f.endsWith('.sqlite'));
    assert.ok(generated.length > 0, 'the demo has exports');
    await sameRecordsAsNative([crafted, ...generated], 'wide');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
