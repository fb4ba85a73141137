// The Patterns view's heat map against the native command (issue 34): observed, predicted and
// their difference for a known pair equal what `analyze --config` says for the same model; an
// operation off the fitted curve opens on the timeline around its kernel; the view's state
// travels in a share link (`pt=`) and in a bundle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { withScreenshot, dropFiles, openView, openMenuOf, demoFiles, nativeSummary, NATIVE_BIN, ROOT, sessionPool } from './harness.mjs';

const session = sessionPool();

/** `analyze --config` of the demo for the page's theory TOML. */
function nativeWith(toml) {
  nativeSummary(demoFiles()); // builds the binary once
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-patterns-'));
  const config = path.join(dir, 'model.toml');
  fs.writeFileSync(config, toml);
  const out = execFileSync(NATIVE_BIN, ['analyze', '--config', config, '--json', '-', ...demoFiles()],
    { cwd: ROOT, maxBuffer: 1 << 28 });
  fs.rmSync(dir, { recursive: true, force: true });
  return JSON.parse(out.toString());
}

/** The demo loaded, its theory applied (the predicted bytes come from it); returns the TOML. */
async function loadDemo(page) {
  await dropFiles(page, demoFiles());
  await openView(page, 'theory');
  await page.getByTestId('theory-table').waitFor({ timeout: 120_000 });
  await page.getByTestId('theory-apply').click();
  const toml = await page.evaluate(() => localStorage.getItem('ncclscope.theory.toml'));
  await openView(page, 'patterns');
  await page.getByTestId('patterns-heatmap').waitFor({ timeout: 60_000 });
  return toml;
}

/** The ranks in the heat map's order: each host's ranks in turn. */
const order = (native) => native.patterns.matrix.hosts.flatMap((h) => h.ranks);

/** Hovers the cell of (src, dst) ranks; returns the hover line's figures. */
async function hoverPair(page, testId, position, n) {
  const canvas = page.getByTestId(testId);
  await canvas.scrollIntoViewIfNeeded();
  // The cells lie inside the border: offsets from the content box.
  const box = await canvas.evaluate((c) => {
    const r = c.getBoundingClientRect();
    return { x: r.left + c.clientLeft, y: r.top + c.clientTop, width: c.clientWidth, height: c.clientHeight };
  });
  const [row, col] = position;
  await page.mouse.move(box.x + (col + 0.5) * box.width / n, box.y + (row + 0.5) * box.height / n);
  const line = page.getByTestId(`${testId}-hover`);
  await page.waitForFunction((id) => document.querySelector(`[data-testid="${id}-hover"]`)?.dataset.src != null, testId);
  return line.evaluate((p) => ({ ...p.dataset, text: p.textContent }));
}

test('the difference of a known pair is analyze\'s observed minus predicted', async () => {
  const s = await session();
  await withScreenshot(s.page, 'patterns-difference', async () => {
    await s.page.goto(s.url);
    await s.page.evaluate(() => localStorage.clear());
    const toml = await loadDemo(s.page);
    const native = nativeWith(toml);
    const sum = (entries) => {
      const m = new Map();
      for (const e of entries) {
        if (e.bytes == null) continue;
        const k = `${e.src}>${e.dst}`;
        m.set(k, (m.get(k) || 0) + e.bytes);
      }
      return m;
    };
    const observed = sum(native.comm_matrix);
    const predicted = sum(native.patterns.predicted.entries);
    // A pair both sides hold, and one the layout does not predict.
    const both = [...predicted.keys()].find((k) => observed.has(k));
    assert.ok(both, 'a pair observed and predicted');
    const ranks = order(native);
    const n = Number(await s.page.getByTestId('patterns-heatmap').getAttribute('data-n'));
    assert.equal(n, ranks.length);
    await s.page.getByTestId('patterns-mode-difference').click();
    await s.page.locator('[data-testid=patterns-heatmap][data-mode=difference]').waitFor();
    const legend = await s.page.locator('[data-testid=heatmap-legend]').textContent();
    assert.match(legend, /less than predicted/);
    assert.match(legend, /more than predicted/);
    const [src, dst] = both.split('>').map(Number);
    const h = await hoverPair(s.page, 'patterns-heatmap', [ranks.indexOf(src), ranks.indexOf(dst)], n);
    assert.equal(`${h.src}>${h.dst}`, both);
    assert.equal(Number(h.observed), observed.get(both));
    assert.equal(Number(h.predicted), predicted.get(both));
    assert.equal(Number(h.difference), observed.get(both) - predicted.get(both));
    assert.match(h.text, /observed .* predicted .* difference/);
    assert.deepEqual(s.errors, []);
  });
});

test('an operation off the fitted curve opens on the timeline around its kernel', async () => {
  const s = await session();
  await withScreenshot(s.page, 'patterns-outlier', async () => {
    await s.page.goto(s.url);
    await loadDemo(s.page);
    const row = s.page.locator('[data-testid=patterns-outlier]').first();
    await row.waitFor();
    const [start, end, rank] = await row.evaluate((tr) => [Number(tr.dataset.start), Number(tr.dataset.end), tr.dataset.rank]);
    // Keyboard reachable: a button, opened with Enter.
    await row.getByTestId('patterns-outlier-open').focus();
    await s.page.keyboard.press('Enter');
    await s.page.locator('[data-testid=view][data-view=timeline]').waitFor();
    const w = await s.page.locator('[data-testid=timeline]').getAttribute('data-window');
    const [a, b] = w.split('_').map(Number);
    assert.ok(a <= start && end <= b, `window ${w} holds ${start}..${end}`);
    await s.page.locator('[data-detail=rank]').waitFor({ timeout: 60_000 });
    assert.equal(await s.page.locator('[data-detail=rank]').textContent(), rank);
    assert.deepEqual(s.errors, []);
  });
});

test('the view\'s state travels in a share link and a bundle', async () => {
  const a = await session();
  let link;
  let saved;
  let picked;
  await withScreenshot(a.page, 'patterns-link', async () => {
    await a.page.goto(a.url);
    await loadDemo(a.page);
    await a.page.getByTestId('patterns-mode-difference').click();
    await a.page.getByTestId('patterns-cells').selectOption('r');
    const par = await a.page.getByTestId('patterns-parallelism').locator('option').nth(1).getAttribute('value');
    await a.page.getByTestId('patterns-parallelism').selectOption(par);
    // A pick with the keyboard: focus the map, move, Enter.
    await a.page.getByTestId('patterns-heatmap').focus();
    await a.page.keyboard.press('ArrowRight');
    await a.page.keyboard.press('Enter');
    picked = await a.page.getByTestId('patterns-heatmap-hover').evaluate((p) => `${p.dataset.src}_${p.dataset.dst}`);
    await a.page.getByTestId('copy-link').click();
    await a.page.getByTestId('share-link').waitFor({ timeout: 60_000 });
    link = await a.page.getByTestId('share-link').inputValue();
    assert.ok(new URL(link).hash.includes(`pt=d*r*${par}**${picked}`), `${link} carries the view`);
    await openMenuOf(a.page, 'export-bundle');
    const [download] = await Promise.all([a.page.waitForEvent('download'), a.page.getByTestId('export-bundle').click()]);
    saved = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-patterns-bundle-')), 'bundle.html');
    fs.copyFileSync(await download.path(), saved);
  });
  const restored = async (page) => {
    await openView(page, 'patterns');
    await page.locator('[data-testid=patterns-mode-difference][aria-pressed=true]').waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId('patterns-cells').inputValue(), 'r');
    const hover = page.getByTestId('patterns-heatmap-hover');
    await page.waitForFunction(() => document.querySelector('[data-testid=patterns-heatmap-hover]')?.dataset.src != null);
    assert.equal(await hover.evaluate((p) => `${p.dataset.src}_${p.dataset.dst}`), picked);
  };
  const b = await session();
  await withScreenshot(b.page, 'patterns-link-restore', async () => {
    await b.page.goto(b.url + new URL(link).hash);
    await b.page.getByTestId('link-waiting').waitFor();
    await dropFiles(b.page, demoFiles());
    await b.page.getByTestId('link-restored').waitFor({ timeout: 120_000 });
    await restored(b.page);
    assert.deepEqual(b.errors, []);
  });
  const c = await session();
  await withScreenshot(c.page, 'patterns-bundle', async () => {
    await c.page.goto(`file://${saved}`);
    await c.page.getByTestId('bundle-note').waitFor({ timeout: 60_000 });
    await restored(c.page);
    assert.deepEqual(c.errors, []);
  });
  fs.rmSync(path.dirname(saved), { recursive: true, force: true });
});

test('a hostile pt= value is refused as the link, not a broken page', async () => {
  const d = await session();
  await d.page.goto(`${d.url}#v=1&pt=d*n*%3Cscript%3E**`);
  await d.page.getByTestId('link-unreadable').waitFor();
  assert.match(await d.page.getByTestId('link-unreadable').textContent(), /patterns view/);
  assert.deepEqual(d.errors, []);
});
