// What a new user tripped over (issue 30, point 7), each checked as that user would see it: a
// table cut on the right shows a cue that there is more, and the notes' text keeps its width at
// 800 px; bar charts have axes, values and units; the bandwidth scatter has a y unit, no clipped
// tick, its limit labels clear of the points and one colour per operation; topology link labels
// do not collide; the theory form marks which inputs the run filled and which are assumed; two
// unrelated captures get a warning; logs alone say what the timeline needs; no raw floats in
// the details drawer or the tooltip.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startSession, withScreenshot, openView, dropFiles, demoFiles, pickCollective, tableScroller, frames, trackPoint,
  FIXTURES, openDemo,
} from './harness.mjs';

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

/** Opens the page and loads the demo; resolves once the timeline has drawn. */
const loadDemo = (page) => openDemo(page, s.url);

/** Relative luminance (0–255) of a CSS colour `rgb(r, g, b)`. */
const luminance = ([r, g, b]) => 0.2126 * r + 0.7152 * g + 0.0722 * b;

/**
 * The pixels of a page region as the screen shows them (a screenshot decoded in the page):
 * rows of [r, g, b].
 */
async function pixels(page, clip) {
  const png = await page.screenshot({ clip });
  return page.evaluate(async (b64) => {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const img = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
    const c = new OffscreenCanvas(img.width, img.height);
    const ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, img.width, img.height).data;
    const rows = [];
    for (let y = 0; y < img.height; y++) {
      const row = [];
      for (let x = 0; x < img.width; x++) row.push([d[(y * img.width + x) * 4], d[(y * img.width + x) * 4 + 1], d[(y * img.width + x) * 4 + 2]]);
      rows.push(row);
    }
    return rows;
  }, png.toString('base64'));
}

/**
 * How much darker than the page's background the brightest pixel of a 2-px column just inside
 * `side` ('left' or 'right') of a scroll box is, in the middle of its rows: a shadow there
 * darkens even the gaps between the cells' text.
 */
async function edgeShade(page, box, side) {
  const g = await box.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const head = el.querySelector('thead')?.getBoundingClientRect().height ?? 0;
    // The middle third of the rows' height: the shadow is an ellipse centred on the edge's middle.
    const h = el.clientHeight - head;
    return { x: r.x + el.clientLeft, y: r.y + el.clientTop + head + h / 3, w: el.clientWidth, h: h / 3 };
  });
  const x = side === 'right' ? g.x + g.w - 3 : g.x + 1;
  const px = await pixels(page, { x, y: g.y, width: 2, height: g.h });
  const bright = Math.max(...px.flat().map(luminance));
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor
    .match(/\d+/g).slice(0, 3).map(Number));
  return luminance(bg) - bright;
}

test('at 800 px a table cut on the right shows a cue; the notes keep their text column', async () => {
  await withScreenshot(s.page, 'firstuse-narrow', async () => {
    await s.page.setViewportSize({ width: 800, height: 800 });
    await s.page.emulateMedia({ colorScheme: 'light' });
    await loadDemo(s.page);
    for (const [view, table] of [['ranks', 'rank-table'], ['alignment', 'alignment-table']]) {
      await openView(s.page, view);
      const box = tableScroller(s.page, table);
      await box.waitFor();
      const wide = await box.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
      assert.ok(wide.scroll > wide.client + 20, `${table} is wider than 800 px allows: ${JSON.stringify(wide)}`);
      await box.evaluate((el) => { el.scrollLeft = 0; });
      await frames(s.page);
      const atStart = { right: await edgeShade(s.page, box, 'right'), left: await edgeShade(s.page, box, 'left') };
      assert.ok(atStart.right > 8, `${table}: a shadow on the right while more is there: ${JSON.stringify(atStart)}`);
      assert.ok(atStart.left < 4, `${table}: none on the left at the start: ${JSON.stringify(atStart)}`);
      await box.evaluate((el) => { el.scrollLeft = el.scrollWidth; });
      await frames(s.page);
      const atEnd = { right: await edgeShade(s.page, box, 'right'), left: await edgeShade(s.page, box, 'left') };
      assert.ok(atEnd.right < 4, `${table}: none on the right at the end: ${JSON.stringify(atEnd)}`);
      assert.ok(atEnd.left > 8, `${table}: on the left once scrolled: ${JSON.stringify(atEnd)}`);
      // The last columns are reached by scrolling: their headers are on screen at the end.
      const last = s.page.locator(`table[data-testid="${table}"] thead th`).last();
      const lb = await last.boundingBox();
      assert.ok(lb.x + lb.width <= 800 + 1, `${table}: its last header in view once scrolled: ${JSON.stringify(lb)}`);
    }
    await openView(s.page, 'notes');
    const text = s.page.locator('.note-row .note-text').first();
    await text.waitFor();
    const w = (await text.boundingBox()).width;
    assert.ok(w >= 150, `the notes' text column keeps its width at 800 px: ${w} px`);
    assert.deepEqual(s.errors, []);
  });
});

/** Boxes (page pixels) of the elements `selector` matches inside `scope`. */
const boxes = (scope, selector) => scope.locator(selector).evaluateAll((els) => els.map((e) => {
  const r = e.getBoundingClientRect();
  return { x: r.x, y: r.y, w: r.width, h: r.height, text: e.textContent };
}));
const overlap = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

test('bar charts have axes, values and units', async () => {
  await withScreenshot(s.page, 'firstuse-bars', async () => {
    await s.page.setViewportSize({ width: 1366, height: 768 });
    await loadDemo(s.page);
    await openView(s.page, 'operations');
    for (const [id, unit] of [['ops-count-chart', /operations|kernels|count/i], ['ops-bytes-chart', /bytes|B\b|MB|GB|KB/],
      ['rank-count-chart', /operations|kernels|count/i], ['rank-bytes-chart', /bytes|B\b|MB|GB|KB/]]) {
      const chart = s.page.getByTestId(id);
      await chart.waitFor();
      assert.ok(await chart.locator('.chart-axis').count() >= 2, `${id}: both axes drawn`);
      const names = await chart.locator('.chart-axis-name').allTextContents();
      assert.equal(names.length, 2, `${id}: both axes named: ${names}`);
      assert.match(names.join(' '), unit, `${id}: the y axis says its unit: ${names}`);
      const ticks = await chart.locator('.chart-label').allTextContents();
      assert.ok(ticks.some((t) => /^0\b/.test(t.trim())), `${id}: the y axis has ticks from 0: ${ticks}`);
      const bars = await chart.locator('.chart-bar').count();
      const values = await chart.locator('.chart-value').allTextContents();
      assert.ok(bars > 0, `${id}: bars`);
      assert.equal(values.length, bars, `${id}: a value on every bar`);
      for (const v of values) assert.match(v.trim(), /^\d[\d.]*( [KMGT]?B|[kM])?$/, `${id}: a readable value: ${v}`);
    }
    assert.deepEqual(s.errors, []);
  });
});

test('the bandwidth scatter: a y unit, no clipped tick, limit labels clear of the points, a colour per operation', async () => {
  await withScreenshot(s.page, 'firstuse-scatter', async () => {
    await s.page.setViewportSize({ width: 1366, height: 768 });
    await loadDemo(s.page);
    await openView(s.page, 'bandwidth');
    const svg = s.page.getByTestId('bw-scatter');
    await svg.locator('[data-testid=scatter-point]').first().waitFor();
    // The y axis: named, and every tick in a unit of bandwidth (the unit its magnitude calls for).
    const names = await svg.locator('.chart-axis-name').allTextContents();
    assert.ok(names.some((n) => /bandwidth/.test(n)), `the y axis named: ${names}`);
    const yTicks = await svg.locator('text.chart-label[text-anchor=end]').allTextContents();
    assert.ok(yTicks.length >= 2, `y ticks: ${yTicks}`);
    for (const t of yTicks) assert.match(t, /^\d[\d.]* [KMGT]?B\/s$/, `a y tick with its unit: ${t}`);
    // Every label inside the drawing: none cut by its edges.
    const frame = (await svg.boundingBox());
    for (const b of await boxes(svg, 'text')) {
      assert.ok(b.y >= frame.y - 0.5 && b.y + b.h <= frame.y + frame.height + 0.5
        && b.x >= frame.x - 0.5 && b.x + b.w <= frame.x + frame.width + 0.5, `"${b.text}" within the plot: ${JSON.stringify(b)}`);
    }
    // The limit lines' labels over no point.
    const points = await boxes(svg, '[data-testid=scatter-point]');
    const limits = await boxes(svg, '[data-testid=limit-line] text');
    assert.ok(limits.length > 0, 'a limit line with its label');
    for (const l of limits) {
      const hit = points.filter((p) => overlap(l, p));
      assert.equal(hit.length, 0, `limit label "${l.text}" over ${hit.length} points`);
    }
    // One colour per operation (the legend's groups), the points drawn in their group's.
    const colours = await svg.locator('[data-testid=scatter-point]').evaluateAll((cs) => {
      const by = {};
      for (const c of cs) {
        const g = c.dataset.group ?? c.closest('[data-group]')?.dataset.group ?? c.getAttribute('class');
        (by[g] ??= new Set()).add(getComputedStyle(c).fill);
      }
      return Object.fromEntries(Object.entries(by).map(([k, v]) => [k, [...v]]));
    });
    const groups = Object.keys(colours);
    assert.ok(groups.length >= 2, `several operations on the demo: ${groups}`);
    for (const g of groups) assert.equal(colours[g].length, 1, `${g}: one colour: ${colours[g]}`);
    const distinct = new Set(groups.map((g) => colours[g][0]));
    assert.equal(distinct.size, groups.length, `a colour per operation: ${JSON.stringify(colours)}`);
    assert.deepEqual(s.errors, []);
  });
});

test('topology link labels do not collide', async () => {
  await withScreenshot(s.page, 'firstuse-topology', async () => {
    await s.page.setViewportSize({ width: 1366, height: 768 });
    await loadDemo(s.page);
    await openView(s.page, 'topology');
    const diagrams = s.page.locator('svg.topology-diagram');
    await diagrams.first().waitFor();
    let labels = 0;
    for (let d = 0; d < await diagrams.count(); d++) {
      const b = await boxes(diagrams.nth(d), '.topo-label');
      labels += b.length;
      for (let i = 0; i < b.length; i++) {
        for (let j = i + 1; j < b.length; j++) {
          assert.ok(!overlap(b[i], b[j]), `diagram ${d}: "${b[i].text}" and "${b[j].text}" overlap: ${JSON.stringify([b[i], b[j]])}`);
        }
      }
    }
    assert.ok(labels >= 2, `link labels drawn: ${labels}`);
    assert.deepEqual(s.errors, []);
  });
});

test('the theory form marks which inputs the run filled and which are assumed', async () => {
  await withScreenshot(s.page, 'firstuse-theory', async () => {
    await s.page.setViewportSize({ width: 1366, height: 768 });
    await s.page.goto(s.url);
    await s.page.evaluate(() => localStorage.clear());
    await loadDemo(s.page);
    await openView(s.page, 'theory');
    const fields = await s.page.locator('.theory-form label.field').evaluateAll((ls) => ls.map((l) => ({
      field: l.querySelector('[data-field]')?.dataset.field,
      inferred: !!l.querySelector('.inferred'),
      assumed: !!l.querySelector('.assumed'),
    })).filter((f) => f.field));
    const inferred = fields.filter((f) => f.inferred).map((f) => f.field);
    const assumed = fields.filter((f) => f.assumed).map((f) => f.field);
    for (const f of fields) assert.ok(!(f.inferred && f.assumed), `${f.field}: one mark`);
    // The run tells its layout and iterations; it cannot tell the model's shape.
    assert.ok(inferred.length >= 2, `inputs filled from the run: ${inferred}`);
    assert.ok(inferred.some((f) => /tp|dp|pp|layout/i.test(f)), `the layout from the run: ${inferred}`);
    assert.ok(assumed.length >= 2, `inputs assumed: ${assumed}`);
    assert.ok(assumed.some((f) => /hidden|layers|seq/i.test(f)), `the model's shape assumed: ${assumed}`);
    const said = await s.page.getByTestId('theory-sources').textContent();
    assert.match(said, new RegExp(`^${inferred.length} of the form's values come from the run`), said);
    assert.match(said, new RegExp(`${assumed.length} are assumed`), said);
    assert.deepEqual(s.errors, []);
  });
});

test('two unrelated captures dropped together get a warning', async (t) => {
  const nsys = path.join(FIXTURES, 'nsys');
  const files = ['GindaChen-nsys-ai_mfu_2gpu_before.sqlite', 'GindaChen-nsys-ai_mfu_2gpu_after.sqlite'].map((f) => path.join(nsys, f));
  if (!files.every((f) => fs.existsSync(f))) return t.skip(`real fixtures absent at ${FIXTURES}`);
  await withScreenshot(s.page, 'firstuse-captures', async () => {
    await s.page.setViewportSize({ width: 1366, height: 768 });
    await s.page.goto(s.url);
    await dropFiles(s.page, files);
    const warning = s.page.getByTestId('captures');
    await warning.waitFor({ timeout: 120_000 });
    assert.match(await warning.textContent(), /2 separate captures/);
    await openView(s.page, 'timeline');
    assert.match(await s.page.getByTestId('timeline-captures').textContent(), /2 captures far apart/);
    // One capture alone: no warning.
    await s.page.goto(s.url);
    await dropFiles(s.page, files.slice(0, 1));
    await s.page.getByTestId('overview-fusion').waitFor({ timeout: 120_000 });
    await s.page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window, null, { timeout: 60_000 });
    assert.equal(await s.page.getByTestId('captures').count(), 0);
    assert.deepEqual(s.errors, []);
  });
});

test('logs alone: the timeline says what it needs, not "0 tracks"', async () => {
  await withScreenshot(s.page, 'firstuse-logs-alone', async () => {
    await s.page.setViewportSize({ width: 1366, height: 768 });
    await s.page.goto(s.url);
    await dropFiles(s.page, demoFiles().filter((f) => f.endsWith('.log')));
    await s.page.getByTestId('overview-fusion').waitFor({ timeout: 120_000 });
    // Beside the overview, where the canvas would be: what the timeline needs and how to make it.
    const needs = s.page.getByTestId('timeline-needs');
    await needs.waitFor();
    assert.match(await needs.textContent(), /needs the Nsight Systems exports/);
    assert.match(await needs.textContent(), /nsys export --type sqlite/);
    assert.equal(await s.page.getByTestId('timeline').count(), 0, 'no empty canvas');
    assert.doesNotMatch(await s.page.getByTestId('view').innerText(), /\b0 tracks\b/);
    // The Timeline view itself says the same.
    await openView(s.page, 'timeline');
    const view = s.page.getByTestId('view-needs');
    await view.waitFor();
    assert.match(await view.textContent(), /needs Nsight Systems exports \(\.sqlite\)/);
    assert.equal(await s.page.getByTestId('timeline').count(), 0, 'no empty canvas');
    assert.doesNotMatch(await s.page.getByTestId('view').innerText(), /\b0 tracks\b/);
    assert.deepEqual(s.errors, []);
  });
});

/** A raw float: many digits after the point, or an exponent (not a hex id's `1e2`). */
const RAW = /\d\.\d{6,}|(?<![\w.])\d+(\.\d+)?e[-+]?\d+(?!\w)/i;

test('no raw floats in the details drawer or the tooltip', async () => {
  await withScreenshot(s.page, 'firstuse-floats', async () => {
    await s.page.setViewportSize({ width: 1366, height: 768 });
    await loadDemo(s.page);
    await openView(s.page, 'timeline');
    let checked = 0;
    for (const row of [0, 1, 2]) {
      await pickCollective(s.page, row);
      const details = await s.page.getByTestId('details').innerText();
      assert.doesNotMatch(details, RAW, `row ${row}'s details: ${details.match(RAW)?.[0]}`);
      checked++;
    }
    // The tooltip of a kernel: hover across the first rows until three have shown.
    const tooltip = s.page.getByTestId('tooltip');
    let tips = 0;
    for (const row of [0, 1, 2]) {
      for (let i = 1; i < 60 && tips <= row; i++) {
        await s.page.mouse.move(...await trackPoint(s.page, row, i / 60));
        if (!(await tooltip.waitFor({ timeout: 400 }).then(() => true, () => false))) continue;
        const text = await tooltip.innerText();
        assert.doesNotMatch(text, RAW, `tooltip: ${text.match(RAW)?.[0]}`);
        tips++;
      }
    }
    assert.ok(checked === 3 && tips === 3, `${checked} details and ${tips} tooltips read`);
    assert.deepEqual(s.errors, []);
  });
});
