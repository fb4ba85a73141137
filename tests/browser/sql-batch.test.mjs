// The table-scan reader the page's workers use for exports (crates/ingest/sql-sqljs/js/sql-batch.js),
// run in Node on the page's own sql.js: reading numeric cells straight from SQLite must give
// every cell exactly as sql.js's `get()` path gives it (NULLs, integers up to 2^53 and past it,
// whole and fractional reals, texts, blobs, columns past the row's end), and must really be the
// path taken with this sql.js (else the page silently loses its speed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './harness.mjs';

const require = createRequire(import.meta.url);
globalThis.self = globalThis;
const initSqlJs = require(path.join(ROOT, 'node_modules/sql.js/dist/sql-wasm.js'));
// The script defines `self.ncclscopeSqlBatch`, as `importScripts` runs it in a worker.
new Function(fs.readFileSync(path.join(ROOT, 'crates/ingest/sql-sqljs/js/sql-batch.js'), 'utf8'))();

const ROWS = [
  'NULL, 0, -1, 9007199254740991',
  '9007199254740993, 1.5, 2.0, 1e300',
  "'text', x'0102', -9007199254740993, 0.1",
  '42, NULL, 7, -2.0',
];

/// Every row of `sql` read by the batch reader, in batches of `batch` rows, with or without
/// sql.js's module (without it the reader goes through `get()`).
function scan(db, sql, columns, batch, module) {
  const stmt = db.prepare(sql);
  const out = [];
  for (;;) {
    const nums = new Float64Array(columns * batch);
    const tags = new Uint8Array(columns * batch);
    const extra = [];
    const n = self.ncclscopeSqlBatch(stmt, columns, batch, nums, tags, extra, module);
    for (let r = 0; r < n; r++) {
      const cells = [];
      for (let c = 0; c < columns; c++) {
        const k = r * columns + c;
        const tag = tags[k];
        cells.push(tag >= 3 ? [tag, extra[nums[k]]] : [tag, nums[k]]);
      }
      out.push(cells);
    }
    if (n < batch) break;
  }
  const pointer = stmt.ncclscopePointer;
  stmt.free();
  return { rows: out, pointer };
}

test('cells read straight from SQLite are the cells get() gives', async () => {
  const SQL = await initSqlJs();
  const db = new SQL.Database();
  db.run('CREATE TABLE t (a, b, c, d)');
  for (const r of ROWS) db.run(`INSERT INTO t VALUES (${r})`);
  // Plenty of plain rows too, so batches end mid-table.
  for (let i = 0; i < 1000; i++) db.run(`INSERT INTO t VALUES (${i}, ${i * 1000000007}, ${i}.25, NULL)`);
  // Five columns asked of four: the fifth reads as NULL either way.
  const sql = 'SELECT a, b, c, d, 7 FROM t';
  for (const batch of [1, 3, 256]) {
    const direct = scan(db, sql, 6, batch, SQL);
    const viaGet = scan(db, sql, 6, batch, undefined);
    assert.ok(direct.pointer > 0, 'this sql.js gives the statement pointer: the direct path ran');
    assert.equal(viaGet.pointer, 0);
    assert.equal(direct.rows.length, ROWS.length + 1000);
    assert.deepEqual(direct.rows, viaGet.rows, `batch ${batch}`);
  }
  // The kinds, as the Rust side decodes them (0 NULL, 1 exact integer, 2 real, 3 text, 4 blob,
  // 5 an integer past 2^53 as its decimal text).
  const { rows } = scan(db, sql, 6, 16, SQL);
  assert.deepEqual(rows[0].slice(0, 4), [[0, 0], [1, 0], [1, -1], [1, 9007199254740991]]);
  // A row with an integer past 2^53 is read again exactly: its whole reals stay reals there.
  assert.deepEqual(rows[1].slice(0, 4), [[5, '9007199254740993'], [2, 1.5], [2, 2], [2, 1e300]]);
  assert.equal(rows[2][0][0], 3);
  assert.equal(rows[2][0][1], 'text');
  assert.equal(rows[2][1][0], 4);
  assert.deepEqual([...rows[2][1][1]], [1, 2]);
  assert.deepEqual(rows[2].slice(2, 4), [[5, '-9007199254740993'], [2, 0.1]]);
  // Elsewhere a whole real comes as an integer.
  assert.deepEqual(rows[3].slice(0, 6), [[1, 42], [0, 0], [1, 7], [1, -2], [1, 7], [0, 0]]);
  db.close();
});
