// The timeline's filter, clock switch and match marks (issue 9), and links that carry the
// filter, the clock and the open panel (issue 10). Counts are checked against the kernels CSV
// the page exports (written by the export crate from the enriched records, not by the filter).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { withScreenshot, dropFiles, timelineBox, trackPoint, openView, DEMO, ROOT, demoFiles, download, sessionPool } from './harness.mjs';


const session = sessionPool();

/** RFC 4180 rows (quoted fields with commas, doubled quotes, CRLF). */
function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; } else if (c === '\r') { /* CRLF */ } else if (c === '\n') { row.push(field); rows.push(row); row = []; field = ''; } else field += c;
  }
  if (field || row.length) { row.push(field); rows.push(row); }
  const [header, ...body] = rows;
  return body.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

async function kernelsCsv(page) {
  return parseCsv((await download(page, 'download-csv')).bytes.toString('utf8'));
}

const status = (page) => page.getByTestId('filter-status').textContent();
const summary = (page) => page.getByTestId('timeline-summary').textContent();
const windowOf = (page) => page.locator('[data-testid=timeline]').getAttribute('data-window');

async function applyFilter(page, query) {
  await page.getByTestId('timeline-filter').fill(query);
  await page.getByTestId('timeline-filter').press('Enter');
}

/** Waits until the status line reads `kept N of M` (or all M kernels for an empty filter). */
async function kept(page, query) {
  await applyFilter(page, query);
  // The status names the query it is for: wait for this one's.
  await page.waitForFunction((q) => document.querySelector('[data-testid=filter-status]')?.dataset.filter === q,
    query, { timeout: 60_000 });
  const wanted = query.trim() === '' ? /^(\d+) kernels/ : /^kept (\d+) of (\d+) kernels/;
  await page.waitForFunction((src) => new RegExp(src).test(document.querySelector('[data-testid=filter-status]').textContent),
    wanted.source, { timeout: 60_000 });
  return Number(wanted.exec(await status(page))[1]);
}

async function loadDemo(page, url) {
  await page.goto(url);
  await dropFiles(page, demoFiles());
  await page.waitForFunction(() => /^\d+ kernels/.test(document.querySelector('[data-testid=filter-status]')?.textContent ?? ''),
    null, { timeout: 120_000 });
}

let link;

test('the filter keeps what the exported records say, and says why a query is refused', async () => {
  const s = await session();
  const dialogs = [];
  s.page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  await withScreenshot(s.page, 'filter', async () => {
    await loadDemo(s.page, s.url);
    const rows = await kernelsCsv(s.page);
    const total = Number(/^(\d+) kernels/.exec(await status(s.page))[1]);
    assert.equal(total, rows.length, 'every kernel is drawn');
    const count = (f) => rows.filter(f).length;

    const allReduce = count((r) => r.Name === 'AllReduce');
    assert.ok(allReduce > 0 && allReduce < total);
    assert.equal(await kept(s.page, 'op:AllReduce'), allReduce);
    assert.match(await summary(s.page), new RegExp(`, ${allReduce} kernels`));
    assert.equal(await kept(s.page, '-op:allreduce'), total - allReduce, 'negation');
    const tp = count((r) => r['Parallelism Type'] === 'TP');
    assert.ok(tp > 0);
    assert.equal(await kept(s.page, 'par:tp'), tp);
    const unmatched = count((r) => r.Match === 'unmatched');
    assert.equal(await kept(s.page, 'status:unmatched'), unmatched);
    if (unmatched > 0) assert.match(await status(s.page), new RegExp(`${unmatched} without a log line`));
    const big = count((r) => Number(r['Message Size (Bytes)'] || -1) >= 1 << 20);
    assert.equal(await kept(s.page, 'size:>=1MiB'), big);
    // Ranks hide the other rows.
    const low = count((r) => Number(r['Global Rank']) <= 1);
    assert.equal(await kept(s.page, 'rank:0-1'), low);
    assert.match(await summary(s.page), /^2 tracks/);
    // Terms combine.
    const both = count((r) => r.Name === 'AllReduce' && r['Parallelism Type'] === 'TP');
    assert.equal(await kept(s.page, 'allreduce tp'), both);

    // The README's example keeps what the exported records say (issue 30: it used to keep none).
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const example = /takes queries such as\s+`([^`]+)`/.exec(readme)[1];
    const readmeKept = count((r) => ['AllReduce', 'Broadcast'].includes(r.Name) && r['Parallelism Type'] === 'TP'
      && Number(r['Message Size (Bytes)'] || -1) >= 1 << 20 && Number(r['Bus BW (GB/s)'] || Infinity) < 100
      && Number(r['Global Rank']) > 3);
    assert.equal(example, 'op:allreduce,broadcast par:tp size:>=1MiB bw:<100 -rank:0-3');
    assert.ok(readmeKept > 0);
    assert.equal(await kept(s.page, example), readmeKept, example);
    assert.match(readme, new RegExp(`\\(${readmeKept} of the demo's ${total} kernels`));

    // A bad query is refused by name; the timeline keeps the last good view.
    const drawn = await summary(s.page);
    const counted = (await status(s.page)).replace(/\s*unknown key.*$/s, '');
    await applyFilter(s.page, 'colour:red');
    await s.page.getByTestId('filter-error').waitFor();
    assert.match(await s.page.getByTestId('filter-error').textContent(), /unknown key `colour`/);
    assert.equal(await summary(s.page), drawn);
    // The status still counts what is drawn (issue 30: it said "0 kernels").
    assert.ok((await status(s.page)).startsWith(counted), `${await status(s.page)} / ${counted}`);
    // Markup typed into the filter comes back as text.
    await applyFilter(s.page, '<img src=x onerror=alert(1)>');
    await s.page.waitForFunction(() => /<img/.test(document.querySelector('[data-testid=filter-error]')?.textContent ?? ''));
    assert.equal(await s.page.locator('.timeline-controls img').count(), 0);
    assert.equal(await kept(s.page, ''), total, 'clearing shows everything again');
    assert.deepEqual(dialogs, []);
    assert.deepEqual(s.errors, []);
  });
});

test('the clock switch redraws in each rank\'s own clock and back; zoom survives a filter', async () => {
  const s = await session();
  await withScreenshot(s.page, 'clock', async () => {
    await loadDemo(s.page, s.url);
    const synced = await windowOf(s.page);
    await s.page.getByTestId('clock').selectOption('original');
    await s.page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window !== w, synced);
    const own = await windowOf(s.page);
    assert.notEqual(own, synced, 'the demo\'s nodes have offset clocks');
    await s.page.getByTestId('clock').selectOption('sync');
    await s.page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window === w, synced);
    // Zoomed in, a filter keeps the place.
    await s.page.getByTestId('timeline').hover();
    for (let i = 0; i < 3; i++) await s.page.mouse.wheel(0, -200);
    await s.page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window !== w, synced);
    const zoomed = await windowOf(s.page);
    await kept(s.page, 'op:allreduce');
    assert.equal(await windowOf(s.page), zoomed);
    assert.deepEqual(s.errors, []);
  });
});

test('a link carries the filter, the clock and the open panel, and restores them', async () => {
  const a = await session();
  let wanted;
  await withScreenshot(a.page, 'filter-link-make', async () => {
    await loadDemo(a.page, a.url);
    await a.page.getByTestId('clock').selectOption('original');
    await a.page.waitForFunction(() => document.querySelector('[data-testid=clock]').value === 'original');
    wanted = await kept(a.page, 'par:tp size:>=1KB');
    await a.page.getByTestId('view-bandwidth').click();
    await a.page.getByTestId('copy-link').click();
    await a.page.getByTestId('share-link').waitFor({ timeout: 60_000 });
    link = await a.page.getByTestId('share-link').inputValue();
    const fragment = new URL(link).hash;
    assert.ok(fragment.includes('q=par%3Atp%20size%3A%3E%3D1KB'), fragment);
    assert.ok(/[#&]c=o(&|$)/.test(fragment), 'the original clock');
    assert.ok(/[#&]p=bandwidth(&|$)/.test(fragment), 'the open view');
  });
  const b = await session();
  await withScreenshot(b.page, 'filter-link-restore', async () => {
    await b.page.goto(b.url + new URL(link).hash);
    await b.page.getByTestId('link-waiting').waitFor();
    await dropFiles(b.page, demoFiles());
    await b.page.getByTestId('link-restored').waitFor({ timeout: 120_000 });
    // The link's view is open (it names a view: the bar marks its tab), then the timeline's state.
    await b.page.locator('[data-testid=view][data-view=bandwidth]').waitFor();
    assert.equal(await b.page.getByTestId('view-bandwidth').getAttribute('aria-current'), 'page');
    await openView(b.page, 'timeline');
    await b.page.waitForFunction(() => /^kept/.test(document.querySelector('[data-testid=filter-status]')?.textContent ?? ''),
      null, { timeout: 60_000 });
    assert.equal(Number(/^kept (\d+)/.exec(await status(b.page))[1]), wanted);
    assert.equal(await b.page.getByTestId('timeline-filter').inputValue(), 'par:tp size:>=1KB');
    assert.equal(await b.page.getByTestId('clock').inputValue(), 'original');
    assert.deepEqual(b.errors, []);
  });
});

test('a chosen folder loads every file inside it, named by its path', async () => {
  const s = await session();
  await withScreenshot(s.page, 'folder', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').waitFor();
    await s.page.getByTestId('folder-input').setInputFiles(DEMO);
    await s.page.waitForFunction(() => /^\d+ kernels/.test(document.querySelector('[data-testid=filter-status]')?.textContent ?? ''),
      null, { timeout: 120_000 });
    assert.match(await summary(s.page), /^8 tracks/);
    await openView(s.page, 'inputs');
    const names = await s.page.locator('[data-testid=file-row]').evaluateAll((rows) => rows.map((r) => r.dataset.file));
    const wanted = fs.readdirSync(DEMO).map((f) => `demo/${f}`).sort();
    assert.deepEqual([...names].sort(), wanted);
    // The folder's manifest is not an input: it says so, and the rest loads.
    const manifest = s.page.locator('[data-testid=file-row][data-file="demo/MANIFEST"]');
    await manifest.locator('[data-testid=status]').filter({ hasText: /^error/ }).waitFor();
    assert.deepEqual(s.errors, []);
  });
});

test('a kernel whose process has no log says why it has no details', async () => {
  const s = await session();
  await withScreenshot(s.page, 'no-details', async () => {
    await s.page.goto(s.url);
    await dropFiles(s.page, [path.join(DEMO, 'report_node01.sqlite')]);
    await s.page.waitForFunction(() => /^\d+ kernels/.test(document.querySelector('[data-testid=filter-status]')?.textContent ?? ''),
      null, { timeout: 120_000 });
    // Without logs nothing is matched: every kernel is drawn hollow and counted so.
    const total = Number(/^(\d+) kernels/.exec(await status(s.page))[1]);
    assert.match(await status(s.page), new RegExp(`${total} without a log line`));
    for (let i = 1; i < 60 && !(await s.page.getByTestId('details').count()); i++) {
      await s.page.mouse.click(...await trackPoint(s.page, 0, i / 60));
    }
    await s.page.getByTestId('no-details').waitFor({ timeout: 30_000 });
    assert.deepEqual(s.errors, []);
  });
});
