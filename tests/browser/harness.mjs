// Shared set-up for the real-browser tests: serve dist/ on a free loopback port, launch Debian's
// Chromium through playwright-core (never a browser a test tool downloads), record every request
// and every console error, and keep a screenshot of any failure in tests/browser/artifacts/.
import { chromium } from 'playwright-core';
import { after } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serveDir } from './serve.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ARTIFACTS = path.join(ROOT, 'tests/browser/artifacts');
export const FIXTURES = process.env.NCCLSCOPE_REAL_FIXTURES || path.join(ROOT, '../shared/fixtures/real');

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Starts the server and the browser; returns helpers and a `close()`. `prefix` serves the site
 * under a sub-path (`/team/ncclscope/`), as an internal Pages host would; `dist` serves another
 * built directory instead of the page (the benchmarks' own page, `scripts/bench` builds it).
 */
export async function startSession({ prefix = '/', dist = path.join(ROOT, 'dist') } = {}) {
  if (!fs.existsSync(path.join(dist, 'index.html'))) {
    throw new Error(`${path.relative(ROOT, dist)}/ is not built: run \`trunk build --release\` (scripts/test does; scripts/bench builds its own page)`);
  }
  const { server, url } = await serveDir(dist, 0, prefix);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true,
  });
  const page = context.pages()[0] || await context.newPage();
  const requests = [];
  // Every request with its method and whether it carried a body (an upload would).
  const sent = [];
  page.on('request', (r) => sent.push({ url: r.url(), method: r.method(), body: r.postDataBuffer()?.length ?? 0 }));
  const errors = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  async function close() {
    await context.close();
    server.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  return { page, url, origin: new URL(url).origin, requests, sent, errors, close, profile };
}

/** The built-in demo run (`scripts/demo` writes it), and its input files as its MANIFEST lists them. */
export const DEMO = path.join(ROOT, 'target/www-demo/demo');
export const demoFiles = () => fs.readFileSync(path.join(DEMO, 'MANIFEST'), 'utf8')
  .split('\n').filter((l) => l && !l.startsWith('#')).map((f) => path.join(DEMO, f));

/**
 * Opens view `slug` (its tab in the view bar: `view-<slug>`) unless it is open, and waits until
 * its body is in the document. The page shows one view at a time (app/src/page/views/registry.rs).
 */
export async function openView(page, slug) {
  // (A page without a view bar, a bundle or a page of the previous layout, shows everything.)
  await page.getByTestId('view-bar').waitFor({ timeout: 5000 }).catch(() => {});
  if (!(await page.getByTestId('view-bar').count())) return;
  const current = await page.getByTestId('view').getAttribute('data-view').catch(() => null);
  if (current !== slug) await page.getByTestId(`view-${slug}`).click();
  await page.locator(`[data-testid=view][data-view="${slug}"]`).waitFor();
}

/** The view that shows table `testId` (or the element `testId`), where that is not the open one. */
const VIEW_OF = {
  'rank-table': 'ranks', 'comm-table': 'communicators', 'alignment-table': 'alignment',
  'ops-table': 'operations', 'notes-list': 'notes', 'time-table': 'theory',
  'ops-count-chart': 'operations', 'ops-bytes-chart': 'operations', 'rank-count-chart': 'operations',
  'rank-bytes-chart': 'operations', 'bw-scatter': 'bandwidth', 'efficiency-chart': 'bandwidth',
  'warning-count': 'warnings', 'theory-table': 'theory',
  'agg-rank-table': 'aggregate', 'file-list': 'inputs', 'warning-table': 'warnings', 'message-sizes': 'theory',
};

/** Opens the view that holds `testId` when it is one that lives in a view of its own. */
export async function openViewOf(page, testId) {
  if (VIEW_OF[testId]) await openView(page, VIEW_OF[testId]);
}

/** Every rank row's cells, as text. */
export const rankTable = (page) => allRows(page, 'rank-table',
  (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));

/** The header's Export menu holds these; it is opened first when closed. */
const IN_EXPORT_MENU = ['download-trace', 'download-csv', 'export-bundle'];

/** Opens the header menu that holds button `testId`, if it is one and the menu is closed. */
export async function openMenuOf(page, testId) {
  if (IN_EXPORT_MENU.includes(testId) && !(await page.getByTestId(testId).count())) {
    await page.getByTestId('export-menu').click();
  }
}

/** Clicks the button `testId` and returns the file it saves: its suggested name and its bytes. */
export async function download(page, testId) {
  await openMenuOf(page, testId);
  const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId(testId).click()]);
  return { name: file.suggestedFilename(), bytes: fs.readFileSync(await file.path()) };
}

/** Runs `body`; on failure keeps a screenshot named after the test, then rethrows. */
export async function withScreenshot(page, name, body) {
  try {
    await body();
  } catch (e) {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true }).catch(() => {});
    throw e;
  }
}

/** Sessions a test file opens as it needs them (`const session = sessionPool();` at its top,
 * then `await session()`), all closed after its tests. */
export function sessionPool() {
  const open = [];
  after(async () => { for (const s of open) await s.close(); });
  return async () => {
    const s = await startSession();
    open.push(s);
    return s;
  };
}

/** Opens the page at `url` and loads the demo with its button; resolves once the timeline has
 * drawn. */
export async function openDemo(page, url) {
  await page.goto(url);
  await page.getByTestId('load-demo').click();
  await page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window,
    null, { timeout: 120_000 });
}

/** Drops files on the page through a synthetic drag-and-drop DataTransfer. */
export async function dropFiles(page, files) {
  // The app registers its drop listeners when it mounts, after its wasm has loaded: a drop
  // dispatched before that would fall on a page that ignores it.
  await page.getByTestId('load-demo').waitFor();
  const payload = files.map((f) => ({ name: path.basename(f), b64: fs.readFileSync(f).toString('base64') }));
  await page.evaluate((items) => {
    const dt = new DataTransfer();
    for (const { name, b64 } of items) {
      const bin = atob(b64);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      dt.items.add(new File([bytes], name));
    }
    const target = document.querySelector('.page') || document.body;
    target.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, payload);
}

let nativeBuilt = false;

/** The native command's summary of the given inputs (the reference the page must agree with). */
/** The native command, where cargo builds it (`CARGO_TARGET_DIR` if set). */
export const NATIVE_BIN = path.join(process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target'), 'debug/ncclscope');

export function nativeSummary(files) {
  const bin = NATIVE_BIN;
  // Built once per test process, so a stale binary can never answer (a no-op when up to date).
  if (!nativeBuilt) execFileSync('cargo', ['build', '-q', '-p', 'ncclscope-cli'], { cwd: ROOT, stdio: 'inherit' });
  nativeBuilt = true;
  return JSON.parse(execFileSync(bin, ['analyze', '--json', '-', ...files], { cwd: ROOT, maxBuffer: 1 << 28 }).toString());
}

/** The text of one fact of one file row (`data-fact` attribute), once the row has loaded. */
export async function fact(page, fileName, factName) {
  await openView(page, 'inputs');
  const row = page.locator(`[data-testid=file-row][data-file="${fileName}"]`);
  await row.locator('[data-testid=status]').filter({ hasText: /^(loaded|error)/ }).waitFor({ timeout: 60_000 });
  return (await row.locator(`[data-fact="${factName}"] b`).textContent()).trim();
}

/**
 * The timeline canvas's box on the page and its geometry, after scrolling it into view (the mouse
 * reaches nothing outside the viewport). The canvas is as wide as its box (canvas pixels are CSS
 * pixels): a label column of `plotX` pixels, then the plot, `plotW` wide; below the ruler its rows
 * (the tracks, grouped under a header per node, and NVTX rows) are `data-row-px` tall.
 * `scale`: page pixels per canvas pixel; `x(f)`: the canvas x of fraction `f` of the plot;
 * `trackY(t)`: the canvas y of the middle of track `t`'s row (tracks in the timeline's order);
 * `canvasY(y)`: canvas y of a y given in the previous layout's rows (ruler 20 px, then one 22 px
 * row per track), so a point inside a track's row stays inside it.
 */
export async function timelineBox(page) {
  if (!(await page.getByTestId('timeline').count())) await openView(page, 'timeline');
  const canvas = page.getByTestId('timeline');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const g = await canvas.evaluate((c) => ({
    width: c.width,
    rowPx: Number(c.dataset.rowPx),
    offsetPx: Number(c.dataset.offsetPx),
    trackRows: (c.dataset.trackRows ?? '').split(' ').filter((r) => r !== '').map((r) => (r === '-' ? null : Number(r))),
  }));
  const plotX = 180;
  const plotW = g.width - plotX;
  const trackY = (t) => 20 + g.trackRows[t] * g.rowPx - g.offsetPx + g.rowPx / 2;
  const canvasY = (y) => {
    if (y < 20) return y;
    const t = Math.floor((y - 20) / 22);
    return 20 + g.trackRows[t] * g.rowPx - g.offsetPx + (((y - 20) % 22) / 22) * g.rowPx;
  };
  return { box, scale: box.width / g.width, plotX, plotW, x: (f) => plotX + f * plotW, trackY, canvasY, ...g };
}

/** Page coordinates of the middle of track `t`'s row at fraction `f` of the plot. */
export async function trackPoint(page, t, f) {
  const g = await timelineBox(page);
  return [g.box.x + g.x(f) * g.scale, g.box.y + g.trackY(t) * g.scale];
}

/**
 * Clicks across row `row` of the timeline until a kernel that ran a collective is picked (its
 * details list the collective's members); returns the details' instance line.
 */
export async function pickCollective(page, row = 0) {
  for (let i = 1; i < 60; i++) {
    // (Measured again each time: the details drawer, once open, narrows the canvas.)
    await page.mouse.click(...await trackPoint(page, row, i / 60));
    if (!(await page.getByTestId('details').count())) continue;
    await page.waitForFunction(() => !/Looking it up/.test(document.querySelector('[data-testid=details]')?.textContent ?? ''));
    if (await page.getByTestId('detail-instance').count()) return page.getByTestId('detail-instance').textContent();
  }
  throw new Error(`no collective picked on row ${row}`);
}

/** Resolves after `n` animation frames in the page (the page's reactions to a scroll are drawn). */
export const frames = (page, n = 2) => page.evaluate((k) => new Promise((resolve) => {
  const step = (left) => (left ? requestAnimationFrame(() => step(left - 1)) : resolve());
  step(k);
}), n);

/** The scroll box of table `testId` (app/src/table.rs: only its visible rows are in the document). */
export const tableScroller = (scope, testId) => scope.locator(`.table-scroll:has(> table[data-testid="${testId}"])`);

/** Scrolls a table's box down by most of its height; true when it was already at its end. */
const scrollOn = (box) => box.evaluate((el) => {
  if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) return true;
  const was = el.scrollTop;
  el.scrollTop += Math.max(20, Math.floor(el.clientHeight * 0.8));
  return el.scrollTop <= was; // could not move on: the end
});

/**
 * Every row of table `testId` in display order, although only the rows its scroll box shows
 * are in the document: scrolls the box from its top to its bottom and keeps what `mapAll`
 * (given the rendered `<tr>`s, run in the page) returns for each row not seen before, by
 * `key`. The box is left at its top. `scope`: a locator the table is in (default: the page).
 */
export async function allRows(page, testId, mapAll, key = (r) => JSON.stringify(r), scope = page) {
  if (scope === page) await openViewOf(page, testId);
  const rows = scope.locator(`table[data-testid="${testId}"] > tbody > tr`);
  const box = tableScroller(scope, testId);
  await box.evaluate((el) => { el.scrollTop = 0; });
  await frames(page);
  const seen = new Map();
  for (let i = 0; i < 100_000; i++) {
    for (const r of await rows.evaluateAll(mapAll)) {
      const k = key(r);
      if (!seen.has(k)) seen.set(k, r);
    }
    if (await scrollOn(box)) break;
    await frames(page);
  }
  await box.evaluate((el) => { el.scrollTop = 0; });
  await frames(page);
  return [...seen.values()];
}

/**
 * The row of table `testId` that matches `rowSelector` (a CSS selector of a `<tr>`), scrolled
 * into the table's box: its scroll box is walked down from the top until the row is rendered.
 */
export async function findRow(page, testId, rowSelector, scope = page) {
  if (scope === page) await openViewOf(page, testId);
  const row = scope.locator(`table[data-testid="${testId}"] > tbody > tr${rowSelector}`);
  const box = tableScroller(scope, testId);
  await box.evaluate((el) => { el.scrollTop = 0; });
  await frames(page);
  for (let i = 0; i < 100_000; i++) {
    if (await row.count()) {
      await row.first().scrollIntoViewIfNeeded();
      await frames(page);
      return row.first();
    }
    if (await scrollOn(box)) break;
    await frames(page);
  }
  throw new Error(`no row ${rowSelector} in ${testId}`);
}
