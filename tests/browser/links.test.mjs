// Shareable links (issue 10): a link made in one browser context restores the same view in a
// fresh one once the same files are dropped (under other names: fingerprints, not names,
// decide); missing files are named; hostile fragments neither break the page nor inject markup.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withScreenshot, dropFiles, pickCollective, openView, openMenuOf, frames, DEMO, demoFiles, sessionPool } from './harness.mjs';

const sha256 = (f) => crypto.createHash('sha256').update(fs.readFileSync(f)).digest('hex');

const session = sessionPool();

/** Waits for the analysis of everything dropped so far (the timeline has a window). */
async function analysed(page) {
  await page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window,
    null, { timeout: 120_000 });
}

const windowOf = (page) => page.locator('[data-testid=timeline]').getAttribute('data-window');

let link;
let madeWindow;
let madeInstance;

test('a link carries the view and the files\' SHA-256 fingerprints', async () => {
  const a = await session();
  await withScreenshot(a.page, 'link-make', async () => {
    await a.page.goto(a.url);
    await a.page.evaluate(() => localStorage.clear());
    await a.page.goto(a.url);
    await dropFiles(a.page, demoFiles());
    await analysed(a.page);
    const whole = await windowOf(a.page);
    // Zoom in around the middle of the timeline.
    const canvas = a.page.getByTestId('timeline');
    await canvas.hover();
    for (let i = 0; i < 4; i++) await a.page.mouse.wheel(0, -200);
    await a.page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window !== w, whole);
    madeWindow = await windowOf(a.page);
    // A selected collective (row 1: rank 1).
    madeInstance = await pickCollective(a.page, 1);
    // A typed theory value, in the Theory view (the link names it: p=theory).
    await openView(a.page, 'theory');
    await a.page.locator('[data-field="model.layers"]').fill('8');
    await a.page.locator('[data-field="model.layers"]').dispatchEvent('change');

    await a.page.getByTestId('copy-link').click();
    await a.page.getByTestId('share-link').waitFor({ timeout: 60_000 });
    link = await a.page.getByTestId('share-link').inputValue();
    assert.equal(await a.page.evaluate(() => location.href), link, 'the address bar holds the link');
    const fragment = new URL(link).hash;
    assert.match(fragment, /^#v=1&/);
    assert.ok(fragment.includes(`w=${madeWindow}`), `${fragment} has the window ${madeWindow}`);
    assert.ok(fragment.includes('t=model.layers*8'), 'the typed theory value');
    assert.match(fragment, /[#&]p=theory(&|$)/, 'the open view');
    const opCount = /opCount ([0-9a-f]+)/.exec(madeInstance)[1];
    assert.match(fragment, new RegExp(`[#&]s=1\\*[^*&]+\\*${opCount}(&|$)`), 'the selection');
    for (const f of demoFiles()) {
      assert.ok(fragment.includes(`*${fs.statSync(f).size}*${sha256(f)}`), `fingerprint of ${path.basename(f)}`);
    }
    assert.deepEqual(a.errors, []);
  });
});

test('a fresh context restores the view once the same files are dropped under any name', async () => {
  assert.ok(link, 'the first test made a link');
  const b = await session();
  await withScreenshot(b.page, 'link-restore', async () => {
    await b.page.goto(b.url + new URL(link).hash);
    await b.page.getByTestId('link-waiting').waitFor();
    const listed = await b.page.getByTestId('link-file').allTextContents();
    assert.equal(listed.length, demoFiles().length);
    for (const f of demoFiles()) {
      assert.ok(listed.some((t) => t.startsWith(path.basename(f)) && t.includes(sha256(f).slice(0, 12))),
        `${path.basename(f)} is asked for`);
    }
    // The same bytes under other names.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-link-'));
    const renamed = demoFiles().map((f, i) => {
      const to = path.join(dir, `renamed-${i}${path.extname(f)}`);
      fs.copyFileSync(f, to);
      return to;
    });
    await dropFiles(b.page, renamed);
    await b.page.getByTestId('link-restored').waitFor({ timeout: 120_000 });
    assert.match(await b.page.getByTestId('link-restored').textContent(), new RegExp(`${renamed.length} files verified`));
    // The link's view opens (Theory), then the timeline's window.
    await b.page.locator('[data-testid=view][data-view=theory]').waitFor();
    assert.equal(await b.page.locator('[data-field="model.layers"]').inputValue(), '8', 'the theory value');
    await openView(b.page, 'timeline');
    assert.equal(await windowOf(b.page), madeWindow, 'the time window');
    await b.page.getByTestId('detail-instance').waitFor({ timeout: 60_000 });
    assert.equal(await b.page.getByTestId('detail-instance').textContent(), madeInstance, 'the selected collective');
    assert.equal(await b.page.locator('[data-detail=rank]').textContent(), '1');
    fs.rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(b.errors, []);
  });
});

test('files that do not match the link are named, and the view is not restored', async () => {
  assert.ok(link, 'the first test made a link');
  const c = await session();
  await withScreenshot(c.page, 'link-mismatch', async () => {
    await c.page.goto(c.url + new URL(link).hash);
    const [first, ...rest] = demoFiles();
    await dropFiles(c.page, [first]);
    await c.page.getByTestId('link-mismatch').waitFor({ timeout: 120_000 });
    const text = await c.page.getByTestId('link-mismatch').textContent();
    for (const f of rest) assert.ok(text.includes(path.basename(f)), `${path.basename(f)} is missing`);
    assert.ok(!text.includes(path.basename(first)), 'the dropped file is not missing');
    // (A timeline, if the dropped file gives one, is not at the link's window.)
    const shown = (await c.page.getByTestId('timeline').count()) ? await windowOf(c.page) : null;
    assert.notEqual(shown, madeWindow);
    assert.deepEqual(c.errors, []);
  });
});

test('hostile fragments neither break the page nor inject markup', async () => {
  const d = await session();
  const dialogs = [];
  d.page.on('dialog', (dlg) => { dialogs.push(dlg.message()); dlg.dismiss().catch(() => {}); });
  const sha = 'a'.repeat(64);
  const cases = [
    ['#v=1&f=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E*3*' + sha, 'link-waiting'],
    ['#v=1&t=model.layers*%3Cscript%3Ealert(2)%3C%2Fscript%3E&f=a*1*' + sha, 'link-waiting'],
    ['#' + 'A'.repeat(100_000), 'link-unreadable'],
    ['#v=1&f=%ZZ*1*' + sha, 'link-unreadable'],
    ['#v=1&w=9_1', 'link-unreadable'],
    ['#v=1&f=a*1*not-a-fingerprint', 'link-unreadable'],
    ['#<script>alert(3)</script>', 'link-unreadable'],
    ['#v=2&x=y', 'link-unreadable'],
  ];
  await withScreenshot(d.page, 'link-hostile', async () => {
    for (const [fragment, shown] of cases) {
      await d.page.goto(d.url + fragment);
      await d.page.getByTestId(shown).waitFor();
      await d.page.getByTestId('load-demo').waitFor();
      const injected = await d.page.evaluate(() => ({
        img: document.querySelectorAll('img[src="x"]').length,
        scripts: [...document.scripts].filter((s) => /alert/.test(s.textContent)).length,
      }));
      assert.deepEqual(injected, { img: 0, scripts: 0 }, fragment.slice(0, 60));
    }
    // Markup from the link is shown as text.
    await d.page.goto(d.url + cases[0][0]);
    assert.match(await d.page.getByTestId('link-waiting').textContent(), /<img src=x onerror=alert\(1\)>/);
    // And the page still loads a run.
    await d.page.getByTestId('load-demo').click();
    await analysed(d.page);
    assert.deepEqual(dialogs, []);
    assert.deepEqual(d.errors, []);
  });
});

/** A loopback "artifact store" on another port (another origin) that allows any origin by CORS. */
function corsStore(dir) {
  const server = http.createServer((req, res) => {
    const file = path.join(dir, path.basename(decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    if (!fs.existsSync(file)) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Access-Control-Allow-Origin': '*', 'Content-Type': 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    resolve({ server, origin: `http://127.0.0.1:${server.address().port}` });
  }));
}

test('#src= loads a run from a CORS server only after the user confirms its host', async () => {
  const store = await corsStore(DEMO);
  const e = await session();
  try {
    await withScreenshot(e.page, 'link-src', async () => {
      const names = demoFiles().map((f) => path.basename(f));
      const urls = names.map((n) => `${store.origin}/runs/${n}`);
      await e.page.goto(`${e.url}#src=${urls.map(encodeURIComponent).join(',')}`);
      await e.page.getByTestId('link-load-sources').waitFor();
      const host = new URL(store.origin).host;
      assert.match(await e.page.getByTestId('link-sources').textContent(), new RegExp(`${names.length} files from ${host}`));
      await e.page.waitForTimeout(500);
      assert.deepEqual(e.requests.filter((u) => u.startsWith(store.origin)), [], 'nothing fetched before the click');

      await e.page.getByTestId('link-load-sources').click();
      await analysed(e.page);
      await e.page.getByTestId('link-restored').waitFor({ timeout: 60_000 });
      await openView(e.page, 'inputs');
      for (const n of names) {
        await e.page.locator(`[data-testid=file-row][data-file="${n}"] [data-testid=status]`)
          .filter({ hasText: /^loaded/ }).waitFor({ timeout: 60_000 });
      }
      const toStore = e.sent.filter((r) => r.url.startsWith(store.origin));
      assert.deepEqual(toStore.map((r) => r.url).sort(), [...urls].sort(), 'exactly the named files');
      assert.ok(toStore.every((r) => r.method === 'GET' && r.body === 0), 'only downloads');
      // Another origin, not named by the link, stays forbidden by the page's policy.
      const other = await e.page.evaluate(async (u) => {
        try { await fetch(u); return 'fetched'; } catch (err) { return 'blocked'; }
      }, `http://localhost:${new URL(store.origin).port}/runs/${names[0]}`);
      assert.equal(other, 'blocked');
      assert.deepEqual(e.errors.filter((m) => !/Content Security Policy|Failed to fetch/.test(m)), []);
    });
  } finally {
    store.server.close();
  }
});

test('a self-contained link carries a window\'s aggregate and opens with no files', async () => {
  const a = await session();
  const tables = (page, root) => page.locator(`[data-testid=${root}] table`).evaluateAll((ts) => ts.map((t) =>
    [...t.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent.trim()))));
  let made;
  let url;
  await withScreenshot(a.page, 'link-summary-make', async () => {
    await a.page.goto(a.url);
    await a.page.getByTestId('load-demo').click();
    await analysed(a.page);
    const canvas = a.page.getByTestId('timeline');
    await canvas.hover();
    for (let i = 0; i < 2; i++) await a.page.mouse.wheel(0, -200);
    await a.page.getByTestId('aggregate-window').click();
    await a.page.getByTestId('window-aggregate').waitFor({ timeout: 60_000 });
    made = await tables(a.page, 'window-aggregate');
    assert.equal(made.length, 2, 'per operation and per rank');
    assert.ok(made[0].length > 0 && made[1].length > 0, 'rows in both');
    await a.page.getByTestId('copy-summary-link').click();
    url = await a.page.getByTestId('share-link').inputValue();
    assert.match(new URL(url).hash, /[#&]sum=/);
    assert.doesNotMatch(new URL(url).hash, /[#&]f=/, 'no files needed');
    assert.deepEqual(a.errors, []);
  });
  const b = await session();
  await withScreenshot(b.page, 'link-summary-open', async () => {
    await b.page.goto(b.url + new URL(url).hash);
    await b.page.getByTestId('link-summary').waitFor();
    assert.deepEqual(await tables(b.page, 'link-summary'), made, 'the same tables, with no file loaded');
    assert.equal(await b.page.locator('[data-testid=file-row]').count(), 0);
    assert.deepEqual(b.errors, []);
  });
});

test('an exported bundle opens in a fresh context with no files and no network', async () => {
  const a = await session();
  // What every view shows (the page shows one view at a time): the timeline's summary, the file
  // list, every table of every view.
  const views = async (page) => {
    const all = { timeline: null, files: [], tables: [] };
    const slugs = await page.locator('[data-testid=view-bar] .view-tab').evaluateAll((ts) => ts.map((t) => t.dataset.view));
    for (const slug of slugs) {
      await openView(page, slug);
      if (slug === 'theory') await page.getByTestId('theory-table').waitFor({ timeout: 60_000 });
      await frames(page, 3);
      const v = await page.evaluate(() => ({
        timeline: document.querySelector('[data-testid=timeline-summary]')?.textContent.trim(),
        files: [...document.querySelectorAll('[data-testid=file-row]')].map((r) => r.dataset.file),
        tables: [...document.querySelectorAll('table')].map((t) => t.innerText),
      }));
      all.timeline ??= v.timeline;
      all.files.push(...v.files);
      all.tables.push(...v.tables.map((t) => `${slug}: ${t}`));
    }
    return all;
  };
  let saved;
  let made;
  await withScreenshot(a.page, 'bundle-make', async () => {
    await a.page.goto(a.url);
    await a.page.getByTestId('load-demo').click();
    await analysed(a.page);
    made = await views(a.page);
    await openMenuOf(a.page, 'export-bundle');
    const [download] = await Promise.all([a.page.waitForEvent('download'), a.page.getByTestId('export-bundle').click()]);
    assert.equal(download.suggestedFilename(), 'ncclscope-bundle.html');
    saved = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-bundle-')), 'bundle.html');
    fs.copyFileSync(await download.path(), saved);
    assert.deepEqual(a.errors, []);
  });
  const b = await session();
  await withScreenshot(b.page, 'bundle-open', async () => {
    await b.page.goto(`file://${saved}`);
    await b.page.getByTestId('bundle-note').waitFor({ timeout: 60_000 });
    // Nothing that would do nothing here (issue 30: "Choose files…" and "Load demo run" showed).
    for (const id of ['file-input', 'folder-input', 'load-demo', 'copy-link']) {
      assert.equal(await b.page.getByTestId(id).count(), 0, id);
    }
    await b.page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window, null, { timeout: 60_000 });
    const opened = await views(b.page);
    assert.equal(opened.timeline, made.timeline, 'the same timeline');
    assert.deepEqual(opened.files, made.files, 'the same file list');
    assert.deepEqual(opened.tables, made.tables, 'the same tables');
    assert.deepEqual(b.requests.filter((u) => !u.startsWith('file://') && !u.startsWith('data:')), [], 'no network');
    assert.deepEqual(b.errors, []);
  });
  fs.rmSync(path.dirname(saved), { recursive: true, force: true });
});

test('a self-contained link carries a picked kernel\'s details and opens with no files', async () => {
  const a = await session();
  const panel = (page, root) => page.locator(`[data-testid=${root}] .details`).first().innerText();
  let made;
  let url;
  await withScreenshot(a.page, 'link-kernel-make', async () => {
    await a.page.goto(a.url);
    await a.page.getByTestId('load-demo').click();
    await analysed(a.page);
    await pickCollective(a.page, 2);
    made = await panel(a.page, 'details');
    assert.match(made, /Bus BW\s+[\d.]+ (TB|GB|MB|KB|B)\/s/, 'enriched fields shown, in units');
    await a.page.getByTestId('copy-kernel-link').click();
    url = await a.page.getByTestId('share-link').inputValue();
    assert.match(new URL(url).hash, /[#&]k=/);
    assert.deepEqual(a.errors, []);
  });
  const b = await session();
  await withScreenshot(b.page, 'link-kernel-open', async () => {
    await b.page.goto(b.url + new URL(url).hash);
    await b.page.getByTestId('link-kernel').waitFor();
    assert.equal(await panel(b.page, 'link-kernel'), made, 'the same details, with no file loaded');
    assert.deepEqual(b.errors, []);
  });
});
