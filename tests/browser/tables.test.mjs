// The rank and communicator tables over the demo run: they sort by any column (numbers by value,
// both ways, `aria-sort` on the header) and save as CSV with the table's own header and rows;
// plots save as PNG; light and dark themes, following the system and the header's toggle, keep
// table text readable; the keyboard reaches and works every sort header and export button.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSession, withScreenshot, download, openView } from './harness.mjs';

let s;
before(async () => {
  s = await startSession();
  await s.page.goto(s.url);
  await s.page.getByTestId('load-demo').click();
  await s.page.getByTestId('view-operations').waitFor({ timeout: 120_000 });
  await openView(s.page, 'operations');
  await s.page.getByTestId('ops-table').waitFor({ timeout: 120_000 });
  await openView(s.page, 'ranks');
  await s.page.getByTestId('rank-row').first().waitFor();
  await openView(s.page, 'communicators');
  await s.page.getByTestId('comm-row').first().waitFor();
});
after(async () => { await s?.close(); });

const rankOrder = () => s.page.getByTestId('rank-row').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.rank)));
const header = (table, col) => s.page.locator(`[data-testid=${table}] th[data-col="${col}"]`);
/** A header's text without its sort arrow. */
const headerTexts = (table) => s.page.locator(`[data-testid=${table}] thead th`)
  .evaluateAll((ths) => ths.map((th) => th.firstChild.textContent.trim()));

/** Total bytes per rank, from the operations panel's table (raw byte counts, not the rank table). */
async function bytesPerRank() {
  await openView(s.page, 'operations');
  const heads = await headerTexts('ops-table');
  const rows = await s.page.locator('[data-testid=ops-table] tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  const byteCols = heads.map((h, i) => (h.endsWith(' bytes') ? i : -1)).filter((i) => i >= 0);
  const out = new Map();
  for (const r of rows) {
    if (r[0] === 'total') continue;
    out.set(Number(r[0]), byteCols.reduce((a, i) => a + Number(r[i]), 0));
  }
  return out;
}

/** WCAG relative luminance of a computed `rgb(...)` colour. */
function luminance(rgb) {
  const [r, g, b] = rgb.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const contrast = (a, b) => {
  const [l1, l2] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (l1 + 0.05) / (l2 + 0.05);
};

/** A table cell's text colour and the background it is drawn on (first opaque ancestor). */
const cellColours = (selector) => s.page.locator(selector).first().evaluate((el) => {
  let bg = 'rgb(255, 255, 255)';
  for (let e = el; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (c && c !== 'transparent' && !/rgba\(.*, 0\)$/.test(c)) { bg = c; break; }
  }
  return { fg: getComputedStyle(el).color, bg };
});

test('the keyboard reaches the sort headers and export buttons, and Enter sorts', async () => {
  await withScreenshot(s.page, 'tables-keyboard', async () => {
    const page = s.page;
    const seen = new Set();
    let header0 = false;
    // Each view's tables and plots, from the top of the page (the header's actions first).
    const wanted = { ranks: ['rank-table-csv', 'rank-table:th'], communicators: ['comm-table-csv', 'comm-table:th'], alignment: ['alignment-table:th'], bandwidth: ['bw-scatter-svg', 'bw-scatter-png'] };
    for (const [view, want] of Object.entries(wanted)) {
     await openView(page, view);
     await page.locator('body').click({ position: { x: 1, y: 1 } });
     for (let i = 0; i < 600 && !(want.every((w) => seen.has(w)) && (view !== 'ranks' || header0)); i++) {
      await page.keyboard.press('Tab');
      const f = await page.evaluate(() => {
        const e = document.activeElement;
        return {
          id: e?.dataset?.testid ?? '',
          table: e?.closest('table')?.dataset?.testid ?? '',
          col: e?.matches('th.sortable') ? e.dataset.col : null,
          outline: e ? getComputedStyle(e).outlineStyle : 'none',
        };
      });
      if (f.id) seen.add(f.id);
      if (f.col !== null) seen.add(`${f.table}:th`);
      if (f.table === 'rank-table' && f.col === '0') {
        header0 = true;
        assert.notEqual(f.outline, 'none', 'a focused header shows its focus');
      }
     }
    }
    for (const id of ['file-input', 'theme-toggle', 'load-demo', 'rank-table-csv', 'comm-table-csv', 'rank-table:th', 'comm-table:th', 'alignment-table:th', 'bw-scatter-svg', 'bw-scatter-png']) {
      assert.ok(seen.has(id), `Tab reaches ${id}`);
    }
    // Enter on a focused header sorts, again the other way; Space too.
    await openView(page, 'ranks');
    const h = header('rank-table', 0);
    await h.focus();
    await page.keyboard.press('Enter');
    assert.equal(await h.getAttribute('aria-sort'), 'ascending');
    const asc = await rankOrder();
    assert.deepEqual(asc, [...asc].sort((a, b) => a - b));
    await page.keyboard.press(' ');
    assert.equal(await h.getAttribute('aria-sort'), 'descending');
    const desc = await rankOrder();
    assert.deepEqual(desc, [...asc].sort((a, b) => b - a));
    assert.equal(await header('rank-table', 1).getAttribute('aria-sort'), 'none');
  });
});

test('the rank table sorts by bytes both ways and saves the table as CSV', async () => {
  await withScreenshot(s.page, 'tables-ranks', async () => {
    const bytes = await bytesPerRank();
    await openView(s.page, 'ranks');
    const rows = await rankOrder();
    assert.equal(bytes.size, rows.length, 'one operations row per rank row');
    const col = (await headerTexts('rank-table')).indexOf('operations (bytes)');
    assert.ok(col >= 0);
    await header('rank-table', col).click();
    assert.equal(await header('rank-table', col).getAttribute('aria-sort'), 'ascending');
    const up = (await rankOrder()).map((r) => bytes.get(r));
    assert.deepEqual(up, [...up].sort((a, b) => a - b), 'ascending by total bytes');
    await header('rank-table', col).click();
    assert.equal(await header('rank-table', col).getAttribute('aria-sort'), 'descending');
    const down = (await rankOrder()).map((r) => bytes.get(r));
    assert.deepEqual(down, [...up].sort((a, b) => b - a), 'descending by total bytes');
    assert.ok(up[0] < up[up.length - 1], 'the demo ranks do not all move the same bytes');

    // Sorted by pid, numerically (a text sort would put 10000 before 9999).
    await header('rank-table', 2).click();
    const pids = await s.page.locator('[data-testid=rank-row] td:nth-child(3)').allTextContents();
    assert.deepEqual(pids.map(Number), pids.map(Number).sort((a, b) => a - b));

    const { name, bytes: csv } = await download(s.page, 'rank-table-csv');
    assert.equal(name, 'ncclscope-rank-table.csv');
    const lines = csv.toString('utf8').trim().split('\r\n');
    assert.equal(lines[0], (await headerTexts('rank-table')).join(','), 'the table\'s header');
    assert.equal(lines.length - 1, await s.page.getByTestId('rank-row').count(), 'a line per row');
    // As sorted: by pid.
    assert.deepEqual(lines.slice(1).map((l) => Number(l.split(',')[2])), pids.map(Number));
  });
});

test('the communicator table sorts by size and bandwidth and saves as CSV', async () => {
  await withScreenshot(s.page, 'tables-comms', async () => {
    await openView(s.page, 'communicators');
    const heads = await headerTexts('comm-table');
    const size = heads.indexOf('size');
    await header('comm-table', size).click();
    const sizes = (await s.page.locator('[data-testid=comm-row] td:nth-child(2)').allTextContents()).map(Number);
    assert.deepEqual(sizes, [...sizes].sort((a, b) => a - b));
    await header('comm-table', heads.indexOf('median bus BW')).click();
    await header('comm-table', heads.indexOf('median bus BW')).click();
    const bw = (await s.page.getByTestId('comm-row').getByTestId('bus-bw').allTextContents())
      .filter((t) => t).map((t) => Number.parseFloat(t));
    assert.ok(bw.length > 1, 'communicators with a bandwidth');
    assert.deepEqual(bw, [...bw].sort((a, b) => b - a), 'descending by GB/s');
    const { name, bytes: csv } = await download(s.page, 'comm-table-csv');
    assert.equal(name, 'ncclscope-comm-table.csv');
    const lines = csv.toString('utf8').trim().split('\r\n');
    assert.equal(lines[0], heads.join(','));
    assert.equal(lines.length - 1, await s.page.getByTestId('comm-row').count());
  });
});

test('a plot saves as PNG', async () => {
  await withScreenshot(s.page, 'tables-png', async () => {
    await openView(s.page, 'bandwidth');
    const { name, bytes } = await download(s.page, 'bw-scatter-png');
    assert.equal(name, 'ncclscope-bw-scatter.png');
    assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
    // Twice the plot's size on the page.
    const width = bytes.readUInt32BE(16);
    const box = await s.page.getByTestId('bw-scatter').boundingBox();
    assert.ok(Math.abs(width - 2 * box.width) <= 2, `width ${width} for ${box.width} px`);
  });
});

test('dark theme follows the system, the toggle flips and remembers it, text stays readable', async () => {
  await withScreenshot(s.page, 'tables-theme', async () => {
    const page = s.page;
    const bodyBg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    /** A pixel of the timeline's label column, first track row (the canvas paints it itself). */
    const canvasPixel = () => page.getByTestId('timeline').evaluate((c) => [...c.getContext('2d').getImageData(2, 24, 1, 1).data]);
    const cell = '[data-testid=rank-table] tbody td';
    const readable = async (what) => {
      await openView(page, 'ranks');
      const { fg, bg } = await cellColours(cell);
      const c = contrast(fg, bg);
      assert.ok(c >= 4.5, `${what}: contrast ${c.toFixed(2)} of ${fg} on ${bg}`);
      const h = await cellColours('[data-testid=rank-table] thead th');
      assert.ok(contrast(h.fg, h.bg) >= 4.5, `${what}: header contrast`);
    };

    await page.emulateMedia({ colorScheme: 'light' });
    assert.ok(luminance(await bodyBg()) > 0.8, 'light by default');
    await readable('light');
    await page.emulateMedia({ colorScheme: 'dark' });
    assert.ok(luminance(await bodyBg()) < 0.05, `dark when the system is: ${await bodyBg()}`);
    await readable('dark');
    // The canvas redraws with the theme's colours.
    await openView(page, 'timeline');
    await page.waitForFunction(() => {
      const d = document.querySelector('[data-testid=timeline]').getContext('2d').getImageData(2, 24, 1, 1).data;
      return d[0] < 80;
    });
    assert.ok((await canvasPixel())[0] < 80, 'timeline rows dark');

    const toggle = page.getByTestId('theme-toggle');
    await toggle.click();
    assert.ok(luminance(await bodyBg()) > 0.8, 'the toggle makes it light');
    await readable('light by the toggle');
    await openView(page, 'timeline');
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline]').getContext('2d').getImageData(2, 24, 1, 1).data[0] > 200);
    assert.equal(await page.evaluate(() => localStorage.getItem('ncclscope-theme')), 'light');
    await toggle.press('Enter');
    assert.ok(luminance(await bodyBg()) < 0.05, 'and dark again (keyboard)');
    // The choice outlives a reload, whatever the system says.
    await page.emulateMedia({ colorScheme: 'light' });
    await page.reload();
    await page.getByTestId('empty-state').waitFor();
    assert.ok(luminance(await bodyBg()) < 0.05, 'still dark after a reload');
    const empty = await cellColours('[data-testid=empty-state] code');
    assert.ok(contrast(empty.fg, empty.bg) >= 4.5, 'empty state readable in dark');
    await page.evaluate(() => localStorage.removeItem('ncclscope-theme'));
  });
});

test('the empty state says what to drop and how to produce it', async () => {
  await withScreenshot(s.page, 'tables-empty', async () => {
    if (!(await s.page.getByTestId('empty-state').count())) await s.page.reload();
    const text = await s.page.getByTestId('empty-state').textContent();
    for (const want of ['NCCL_DEBUG=INFO', 'NCCL_DEBUG_SUBSYS=', 'nsys profile', 'nsys export --type sqlite', 'Load demo run']) {
      assert.ok(text.includes(want), want);
    }
  });
});
