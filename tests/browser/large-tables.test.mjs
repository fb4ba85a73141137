// Long tables keep a bounded number of rows in the document (app/src/table.rs renders the rows
// its scroll box shows and a margin), yet every row stays reachable: by scrolling (mouse or
// keyboard), by sorting and by filtering, and the CSV holds them all. The run: one log of 3 000
// processes (a line each, in 375 hosts of 8), so the rank, communicator and operations tables
// have 3 000 rows each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, allRows, tableScroller, frames, download, openView, openViewOf } from './harness.mjs';

const RANKS = 3000;
/** No table keeps more rows than this in the document (a screen of rows and the margins). */
const MAX_RENDERED = 100;
/** Rank `i`'s element count: distinct for every rank, in no simple order. */
const count = (i) => 4 * (((i * 7919) % 3001) + 1);
const host = (i) => `node${String(Math.floor(i / 8)).padStart(3, '0')}`;

let s;
let dir;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-large-tables-'));
  // Ranks are numbered by sorted host and pid (no init lines): rank i is line i.
  const lines = Array.from({ length: RANKS }, (_, i) => `${host(i)}:${10000 + i}:${10000 + i} [${i % 8}] NCCL INFO AllReduce: opCount 0 `
    + `sendbuff 0x1 recvbuff 0x1 count ${count(i)} datatype 7 op 0 root 0 comm 0x2 [nranks=2] stream 0x3`);
  fs.writeFileSync(path.join(dir, 'many.log'), `${lines.join('\n')}\n`);
  s = await startSession();
  await s.page.goto(s.url);
  await dropFiles(s.page, [path.join(dir, 'many.log')]);
  await s.page.getByTestId('analysis-status').filter({ hasText: /^Analysed in/ }).waitFor({ timeout: 180_000 });
});
after(async () => {
  await s?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Rows of table `id` in the document now. */
const rendered = (id) => s.page.locator(`table[data-testid="${id}"] > tbody > tr`).count();
/** The ranks of the rank rows in the document now, in order. */
const renderedRanks = () => s.page.getByTestId('rank-row').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.rank)));

test('long tables keep a bounded number of rows in the document', async () => {
  await withScreenshot(s.page, 'large-tables-bounded', async () => {
    for (const [id, rows] of [['rank-table', RANKS], ['comm-table', RANKS], ['ops-table', RANKS + 1]]) {
      await openViewOf(s.page, id);
      await s.page.getByTestId(id).waitFor();
      assert.equal(Number(await s.page.getByTestId(id).getAttribute('aria-rowcount')), rows + 1, `${id}: every row counted`);
      const n = await rendered(id);
      assert.ok(n > 10 && n <= MAX_RENDERED, `${id}: ${n} rows in the document`);
    }
    await openView(s.page, 'ranks');
    assert.equal(await s.page.getByTestId('rank-table-shown').textContent(), `${RANKS} rows`);
    // Half way down, still bounded, and the rows there are the ones shown.
    const box = tableScroller(s.page, 'rank-table');
    await box.evaluate((el) => { el.scrollTop = el.scrollHeight / 2; });
    await frames(s.page);
    const middle = await renderedRanks();
    assert.ok(middle.length <= MAX_RENDERED, `${middle.length} rows half way down`);
    assert.ok(middle.some((r) => Math.abs(r - RANKS / 2) < 200), `rows near the middle: ${middle[0]}..${middle.at(-1)}`);
    await box.evaluate((el) => { el.scrollTop = 0; });
    await frames(s.page);
  });
});

test('every row is reachable by scrolling, and the CSV holds them all', async () => {
  await withScreenshot(s.page, 'large-tables-scroll', async () => {
    const rows = await allRows(s.page, 'rank-table', (trs) => trs.map((tr) => ({
      rank: Number(tr.dataset.rank),
      host: tr.children[1].textContent,
      pid: Number(tr.children[2].textContent),
    })), (r) => r.rank);
    assert.equal(rows.length, RANKS);
    rows.forEach((r, i) => {
      assert.equal(r.rank, i, 'in the data\'s order');
      assert.equal(r.host, host(i));
      assert.equal(r.pid, 10000 + i);
    });
    const ops = await allRows(s.page, 'ops-table', (trs) => trs.map((tr) => tr.children[0].textContent));
    assert.equal(ops.length, RANKS + 1, 'every rank and the total');
    await openView(s.page, 'ranks');
    const { bytes } = await download(s.page, 'rank-table-csv');
    assert.equal(bytes.toString('utf8').trim().split('\r\n').length, RANKS + 1, 'a header and a line per rank');
  });
});

test('sorting reorders all rows, not only those in the document', async () => {
  await withScreenshot(s.page, 'large-tables-sort', async () => {
    await openView(s.page, 'ranks');
    const heads = await s.page.locator('[data-testid=rank-table] thead th').evaluateAll((ths) => ths.map((th) => th.firstChild.textContent.trim()));
    const header = s.page.locator(`[data-testid=rank-table] th[data-col="${heads.indexOf('operations (bytes)')}"]`);
    const byBytes = [...Array(RANKS).keys()].sort((a, b) => count(a) - count(b));
    await header.click();
    assert.equal(await header.getAttribute('aria-sort'), 'ascending');
    assert.deepEqual((await renderedRanks()).slice(0, 5), byBytes.slice(0, 5), 'the smallest first');
    await header.click();
    assert.equal(await header.getAttribute('aria-sort'), 'descending');
    assert.deepEqual((await renderedRanks()).slice(0, 5), byBytes.slice(-5).reverse(), 'the largest first');
    // The end of the sorted table, by the keyboard: the scroll box takes the focus and End.
    const box = tableScroller(s.page, 'rank-table');
    await box.focus();
    await s.page.keyboard.press('End');
    await s.page.waitForFunction(() => {
      const el = document.querySelector('.table-scroll:has(> table[data-testid=rank-table])');
      return el.scrollTop + el.clientHeight >= el.scrollHeight - 1;
    });
    await frames(s.page);
    const last = await renderedRanks();
    assert.ok(last.length <= MAX_RENDERED);
    assert.deepEqual(last.slice(-3), byBytes.slice(0, 3).reverse(), 'the smallest last');
    // The CSV is the table as sorted.
    const csv = (await download(s.page, 'rank-table-csv')).bytes.toString('utf8').trim().split('\r\n');
    assert.deepEqual(csv.slice(1, 4).map((l) => Number(l.split(',')[0])), byBytes.slice(-3).reverse());
    await s.page.keyboard.press('Home');
  });
});

test('a filter finds rows anywhere in the table', async () => {
  await withScreenshot(s.page, 'large-tables-filter', async () => {
    await openView(s.page, 'ranks');
    const filter = s.page.getByTestId('rank-table-filter');
    // One host's eight ranks, from the middle of the table.
    await filter.fill('node123');
    await s.page.getByTestId('rank-table-shown').filter({ hasText: `8 of ${RANKS} rows` }).waitFor();
    assert.deepEqual((await renderedRanks()).sort((a, b) => a - b), [...Array(8).keys()].map((k) => 123 * 8 + k));
    // Every word must match: a host and a pid.
    await filter.fill(`node370 ${10000 + 370 * 8 + 5}`);
    await s.page.getByTestId('rank-table-shown').filter({ hasText: `1 of ${RANKS} rows` }).waitFor();
    assert.deepEqual(await renderedRanks(), [370 * 8 + 5]);
    // The CSV is what is shown.
    const csv = (await download(s.page, 'rank-table-csv')).bytes.toString('utf8').trim().split('\r\n');
    assert.equal(csv.length, 2);
    await filter.fill('');
    await s.page.getByTestId('rank-table-shown').filter({ hasText: `${RANKS} rows` }).waitFor();
    assert.ok((await rendered('rank-table')) <= MAX_RENDERED);
    assert.deepEqual(s.errors, []);
  });
});
