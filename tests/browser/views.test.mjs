// The page as a workspace (issue 30), checked as a person would: a drop opens the overview with
// the timeline's canvas within the first screen; every view is one click and one key away and
// shows something or says what it needs; keyboard alone reaches every view and action; axe-core
// (served from node_modules, never a CDN) finds no serious or critical violation on any view;
// links name the view, and a link of the previous layout that names a panel opens the view
// holding it. Screenshots of every view at 1366×768 and 1920×1080 in both themes are kept in
// tests/browser/artifacts/views/ (scripts/screenshots copies the README's into docs/screenshots/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, openView, dropFiles, demoFiles, ARTIFACTS, ROOT, openDemo } from './harness.mjs';

const AXE = path.join(ROOT, 'node_modules/axe-core/axe.min.js');
const SHOTS = path.join(ARTIFACTS, 'views');
const SIZES = [{ width: 1366, height: 768 }, { width: 1920, height: 1080 }];

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

/** Opens the page and loads the demo with its button; resolves once the timeline has drawn. */
async function loadDemo(page) {
  await openDemo(page, s.url);
  await page.getByTestId('overview-parallelism').waitFor({ timeout: 60_000 });
}

/** The slugs of the views the bar lists, in order. */
const listedViews = (page) => page.locator('[data-testid=view-bar] .view-tab')
  .evaluateAll((tabs) => tabs.map((t) => t.dataset.view));

/** The canvas' box relative to the viewport (no scrolling: what the first screen shows). */
const canvasBox = (page) => page.getByTestId('timeline').evaluate((c) => {
  const r = c.getBoundingClientRect();
  return { top: r.top, bottom: r.bottom, height: r.height, vh: window.innerHeight, scrollY: window.scrollY };
});

test('a drop opens the overview, the timeline canvas fills the first screen', async () => {
  await withScreenshot(s.page, 'views-first-screen', async () => {
    for (const size of SIZES) {
      await s.page.setViewportSize(size);
      await loadDemo(s.page);
      assert.equal(await s.page.getByTestId('view').getAttribute('data-view'), 'overview');
      assert.equal(await s.page.getByTestId('view-overview').getAttribute('aria-current'), 'page');
      // What ran and how well it fused, before any scrolling.
      for (const id of ['overview-loaded', 'overview-fusion', 'overview-layout', 'overview-parallelism']) {
        assert.ok(await s.page.getByTestId(id).isVisible(), `${id} at ${size.width}×${size.height}`);
      }
      for (const slug of ['overview', 'timeline']) {
        await openView(s.page, slug);
        await s.page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window);
        const b = await canvasBox(s.page);
        const where = `${slug} at ${size.width}×${size.height}: ${JSON.stringify(b)}`;
        assert.equal(b.scrollY, 0, where);
        assert.ok(b.top >= 0 && b.bottom <= b.vh + 1, `the canvas within the first screen, ${where}`);
        assert.ok(b.height >= b.vh / 2, `the canvas at least half the screen's height, ${where}`);
      }
    }
    assert.deepEqual(s.errors, []);
  });
});

test('every view is one click and one key away, and shows its content or what it needs', async () => {
  await withScreenshot(s.page, 'views-keys', async () => {
    await s.page.setViewportSize(SIZES[0]);
    await loadDemo(s.page);
    const slugs = await listedViews(s.page);
    for (const want of ['overview', 'timeline', 'inputs', 'notes', 'communicators', 'ranks', 'alignment',
      'warnings', 'operations', 'bandwidth', 'topology', 'theory']) {
      assert.ok(slugs.includes(want), `${want} in ${slugs}`);
    }
    for (const slug of slugs) {
      // Its key (shown on the tab), pressed with the focus on the page's body.
      const key = await s.page.getByTestId(`view-${slug}`).getAttribute('aria-keyshortcuts');
      await s.page.evaluate(() => document.activeElement?.blur());
      await s.page.keyboard.press(key.toLowerCase());
      await s.page.locator(`[data-testid=view][data-view="${slug}"]`).waitFor();
      assert.equal(await s.page.getByTestId(`view-${slug}`).getAttribute('aria-current'), 'page', slug);
      // Something to show: the view's content, never an empty box.
      const text = (await s.page.getByTestId('view').innerText()).trim();
      assert.ok(text.length > 40, `${slug} shows something: ${text}`);
    }
    // The demo has logs and exports: every analysis has something to show.
    for (const slug of slugs) {
      assert.equal(await s.page.getByTestId(`view-${slug}`).evaluate((t) => t.classList.contains('empty')), false, slug);
    }
    assert.deepEqual(s.errors, []);
  });
});

test('keyboard alone reaches every view and every action', async () => {
  await withScreenshot(s.page, 'views-tab', async () => {
    await s.page.setViewportSize(SIZES[0]);
    await loadDemo(s.page);
    const slugs = await listedViews(s.page);
    const actions = ['file-input', 'folder-input', 'load-demo', 'copy-link', 'export-menu', 'theme-toggle'];
    const reached = new Set();
    await s.page.evaluate(() => document.activeElement?.blur());
    const wanted = [...actions, ...slugs.map((v) => `view-${v}`)];
    for (let i = 0; i < 200 && !wanted.every((w) => reached.has(w)); i++) {
      await s.page.keyboard.press('Tab');
      const id = await s.page.evaluate(() => {
        const el = document.activeElement;
        // A file input is reached through its label's button.
        return el?.dataset.testid ?? el?.closest('label')?.querySelector('input')?.dataset.testid ?? null;
      });
      if (id) reached.add(id);
    }
    for (const a of actions) assert.ok(reached.has(a), `Tab reaches ${a}: ${[...reached]}`);
    for (const v of slugs) assert.ok(reached.has(`view-${v}`), `Tab reaches the ${v} tab`);
    // Enter on a focused tab opens it; the arrows move between tabs.
    await s.page.getByTestId('view-ranks').focus();
    await s.page.keyboard.press('Enter');
    await s.page.locator('[data-testid=view][data-view=ranks]').waitFor();
    await s.page.keyboard.press('ArrowRight');
    const next = slugs[slugs.indexOf('ranks') + 1];
    assert.equal(await s.page.evaluate(() => document.activeElement?.dataset.view), next);
    assert.deepEqual(s.errors, []);
  });
});

test('a link names the view; a link of the previous layout opens the view holding its panel', async () => {
  await withScreenshot(s.page, 'views-links', async () => {
    await s.page.setViewportSize(SIZES[0]);
    await s.page.goto(s.url);
    await dropFiles(s.page, demoFiles());
    await s.page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window,
      null, { timeout: 120_000 });
    await openView(s.page, 'bandwidth');
    await s.page.getByTestId('copy-link').click();
    await s.page.getByTestId('share-link').waitFor({ timeout: 60_000 });
    const link = new URL(await s.page.getByTestId('share-link').inputValue());
    assert.match(link.hash, /[#&]p=bandwidth(&|$)/, link.hash);
    // The previous layout's panel ids (its panel bar: `p=<panel>`), and this layout's slugs.
    for (const [p, view] of [['window', 'timeline'], ['timeline', 'timeline'], ['notes', 'notes'],
      ['communicators', 'communicators'], ['theory', 'theory'], ['bandwidth', 'bandwidth']]) {
      await s.page.goto('about:blank'); // (a new fragment alone would not reload the page)
      await s.page.goto(s.url + link.hash.replace(/([#&])p=bandwidth(?=&|$)/, `$1p=${p}`));
      await s.page.getByTestId('link-waiting').waitFor();
      await dropFiles(s.page, demoFiles());
      await s.page.getByTestId('link-restored').waitFor({ timeout: 120_000 });
      await s.page.locator(`[data-testid=view][data-view="${view}"]`).waitFor({ timeout: 30_000 });
      assert.equal(await s.page.getByTestId(`view-${view}`).getAttribute('aria-current'), 'page', p);
    }
    assert.deepEqual(s.errors, []);
  });
});

test('axe-core finds no serious or critical violation on any view, in either theme', async () => {
  await withScreenshot(s.page, 'views-axe', async () => {
    await s.page.setViewportSize(SIZES[0]);
    const found = [];
    for (const scheme of ['light', 'dark']) {
      await s.page.emulateMedia({ colorScheme: scheme });
      await loadDemo(s.page);
      await s.page.addScriptTag({ path: AXE });
      for (const slug of await listedViews(s.page)) {
        await openView(s.page, slug);
        await s.page.waitForTimeout(300);
        const violations = await s.page.evaluate(async () => {
          const r = await window.axe.run(document, { resultTypes: ['violations'] });
          return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
            .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
        });
        for (const v of violations) found.push({ scheme, view: slug, ...v });
      }
    }
    assert.deepEqual(found, []);
    assert.deepEqual(s.errors, []);
  });
});

test('screenshots of every view at 1366×768 and 1920×1080 in both themes', async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  await withScreenshot(s.page, 'views-shots', async () => {
    for (const scheme of ['light', 'dark']) {
      await s.page.emulateMedia({ colorScheme: scheme });
      for (const size of SIZES) {
        await s.page.setViewportSize(size);
        await loadDemo(s.page);
        for (const slug of await listedViews(s.page)) {
          await openView(s.page, slug);
          await s.page.waitForTimeout(300);
          const file = path.join(SHOTS, `${slug}-${size.width}x${size.height}-${scheme}.png`);
          await s.page.screenshot({ path: file });
          assert.ok(fs.statSync(file).size > 10_000, file);
        }
      }
    }
    assert.deepEqual(s.errors, []);
  });
});
