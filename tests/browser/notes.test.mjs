// A file's notes, however many (issue 4: "lists every skipped line with its reason"): a real log
// interleaved with over a thousand foreign lines, garbled NCCL lines, a line printed twice and
// WARN lines with timestamps. Every skipped line must be reachable in the page's notes list
// (scrolled from top to bottom: the list holds only what its box shows and asks the worker for
// the rest) with the line number, reason and text an independent reading of the raw text gives;
// the download holds the same rows, and every note the native command lists, in its order; the
// per-reason counts and filter agree; markup in a line stays text; the warnings table shows each
// WARN line's timestamp as printed and sorts by it. Then a log of 400 000 foreign lines: the
// list's end, middle and download reach every one of them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, nativeSummary, frames, download, openView, FIXTURES } from './harness.mjs';

const BASE = path.join(FIXTURES, 'nccl', 'unknown-sglang-notes_tpgds-node0008-ranks8-15_subsysALL-init-coll_2.27.5_c.log');
const haveFixtures = fs.existsSync(BASE);
const ROW_PX = 22;
const NOT_NCCL = 'line skipped: not an NCCL line';
const LOOKS_NCCL = 'line skipped: NCCL-looking line without NCCL INFO/WARN header';

let s;
let dir;
before(async () => {
  s = await startSession();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-notes-'));
});
after(async () => {
  await s?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Foreign line `i`: what a training job prints between NCCL's lines (deterministic). */
function foreign(i) {
  switch (i % 9) {
    case 0: return `[rank${i % 16}] epoch ${i >> 4} step ${i} loss=${(i % 97) / 10} lr=3e-4`;
    case 1: return `<img src=x onerror=alert(${i})> <b>not markup</b> & "quoted", 'too'`;
    case 2: return `=HYPERLINK("http://example.invalid/${i}") -- a formula in a spreadsheet`;
    case 3: return `Traceback (most recent call last):\tline ${i}`;
    case 4: return `  File "/opt/train.py", line ${i}, in <module>   `;
    case 5: return `${'x'.repeat(150)} long line ${i} ${'y'.repeat(40)}`;
    case 6: return `wandb: Syncing run fearless-dawn-${i} ✓ café 漢字`;
    case 7: return `-${i} negative, comma`;
    default: return `\u0007bell and DEL\u007f and NUL\u0000 in line ${i}`;
  }
}

/** The notes test log: the real log with foreign lines, garbled and repeated NCCL lines and WARN lines. */
function notesLog() {
  const base = fs.readFileSync(BASE, 'utf8').split('\n').filter((l) => l !== '');
  const op = base.find((l) => l.includes('AllReduce: opCount'));
  const out = [];
  let n = 0;
  base.forEach((line, k) => {
    out.push(line);
    for (let j = 0; j < 12; j++) out.push(foreign(n++));
    if (k % 10 === 3) out.push('');
    if (k % 25 === 7) out.push(`${line.slice(0, line.indexOf('NCCL INFO'))}NCCL INF cut short at ${k}`);
    if (k % 40 === 11) out.push(`tpgds-aihub0008:52316:52316 [0] NCCL WAR truncated ${k}`);
  });
  // The same operation printed twice, and the run's warnings: a `[%F %T]` one, an epoch one,
  // another `[%F %T]` one and one without a timestamp (days apart: any time zone keeps the order).
  out.push(op);
  out.push('[2026-04-28 14:14:51] tpgds-aihub0008:52316:52316 [0] init.cc:1197 NCCL WARN Cuda failure \'out of memory\'');
  out.push('1777000000.250000 tpgds-aihub0008:52318:52318 [2] transport/net.cc:88 NCCL WARN <img src=x onerror=alert(1)> NET/IB : timeout');
  out.push('[2026-04-30 08:00:00] tpgds-aihub0008:52323:52323 [7] enqueue.cc:42 NCCL WARN late warning');
  out.push('tpgds-aihub0008:52323:52323 [7] enqueue.cc:43 NCCL WARN no time');
  return `${out.join('\n')}\n`;
}

/** A line's text as the page shows it: its first 160 bytes, control characters as symbols, `…` if cut. */
function shown(line) {
  const bytes = Buffer.from(line, 'utf8');
  const cut = bytes.length > 160;
  const text = cut ? bytes.subarray(0, 160).toString('utf8') : line;
  return text.replace(/[\x00-\x1f]/g, (c) => String.fromCharCode(0x2400 + c.charCodeAt(0))).replace(/\x7f/g, '\u2421') + (cut ? '…' : '');
}

/**
 * The skipped lines of `text` read independently of the parser: every line that is not blank
 * and has no `NCCL INFO`/`NCCL WARN` marker, with the reason (`NCCL INF`/`NCCL WAR`: a header
 * cut short) and the text (trailing whitespace is not part of a line).
 */
function skippedLines(text) {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const out = [];
  lines.forEach((raw, i) => {
    const line = raw.replace(/[ \t\n\f\r]+$/, '');
    if (line === '' || /NCCL (INFO|WARN)/.test(line)) return;
    const reason = /NCCL INF|NCCL WAR/.test(line) ? LOOKS_NCCL : NOT_NCCL;
    out.push({ line: String(i + 1), reason, text: shown(line) });
  });
  return out;
}

/** RFC 4180 CSV (CRLF lines, quoted fields). */
function parseCsv(text) {
  const rows = [];
  let row = [];
  let f = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') f += c;
      else if (text[i + 1] === '"') { f += '"'; i++; } else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(f); f = ''; } else if (c === '\r' && text[i + 1] === '\n') { row.push(f); rows.push(row); row = []; f = ''; i++; } else f += c;
  }
  if (f !== '' || row.length) { row.push(f); rows.push(row); }
  return rows;
}

/** A CSV field as the list shows it: a formula-like field has the `'` the download adds taken off. */
const undefused = (f) => (/^'[=+\-@]/.test(f) ? f.slice(1) : f);

/** The download of the file shown in the notes panel, as rows {file, line, severity, reason, text}. */
async function notesCsv(page) {
  const file = await download(page, 'notes-download');
  const [head, ...rows] = parseCsv(file.bytes.toString('utf8'));
  assert.deepEqual(head, ['file', 'line', 'severity', 'reason', 'text']);
  return { name: file.name, rows: rows.map(([f, line, severity, reason, text]) => ({ file: f, line, severity, reason, text: undefused(text) })) };
}

/**
 * Every row of the notes list, read by scrolling its box from top to bottom: at each position
 * the rows under the box's top must be rendered with their notes (not waiting for a page).
 */
async function listRows(page) {
  const box = page.getByTestId('notes-list');
  await box.evaluate((el) => { el.scrollTop = 0; });
  const seen = new Map();
  for (let step = 0; step < 100_000; step++) {
    await frames(page);
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid=notes-list]');
      const top = Math.floor(el.scrollTop / 22);
      return el.querySelector(`[data-testid=note-row][data-index="${top}"]`) && !el.querySelector('[data-testid=note-pending]');
    }, null, { timeout: 30_000 });
    const rows = await box.locator('[data-testid=note-row]').evaluateAll((rs) => rs.map((r) => ({
      index: Number(r.dataset.index), severity: r.dataset.severity,
      file: r.children[0].textContent, line: r.children[1].textContent, reason: r.children[2].textContent, text: r.children[3].textContent,
    })));
    for (const r of rows) seen.set(r.index, r);
    const end = await box.evaluate((el) => {
      if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) return true;
      el.scrollTop += Math.floor(el.clientHeight * 0.8);
      return false;
    });
    if (end) break;
  }
  const indices = [...seen.keys()].sort((a, b) => a - b);
  assert.deepEqual(indices, indices.map((_, i) => i), 'every row of the list was rendered once scrolled to');
  return indices.map((i) => {
    const { index, ...row } = seen.get(i);
    return row;
  });
}

/** The notes panel's per-reason buttons: reason → count. */
const kinds = (page) => page.getByTestId('note-kind').evaluateAll((bs) => Object.fromEntries(bs.map((b) => [b.dataset.reason, Number(b.dataset.count)])));

/** Drops `files`, waits for the analysis and for the notes panel to show file `name`. */
async function load(page, url, files, name) {
  await page.goto(url);
  await dropFiles(page, files);
  await page.getByTestId('analysis-status').filter({ hasText: /^Analysed in/ }).waitFor({ timeout: 180_000 });
  // The file's row is in the Inputs view; its "notes" button opens the Notes view on the file.
  await openView(page, 'inputs');
  const row = page.locator(`[data-testid=file-row][data-file="${name}"]`);
  await row.getByTestId('show-notes').click();
  await page.locator('[data-testid=view][data-view=notes]').waitFor();
  await page.getByTestId('notes-shown').waitFor();
}

for (const query of ['?parse-workers=0', '?parse-workers=2']) test(`every skipped line is listed with its reason and text, and downloads${query && ` (${query})`}`, { skip: !haveFixtures }, async () => {
  const text = notesLog();
  const log = path.join(dir, 'noisy run.log');
  fs.writeFileSync(log, text);
  const expected = skippedLines(text);
  assert.ok(expected.length > 1000, `${expected.length} skipped lines`);
  await withScreenshot(s.page, `notes${query.replace(/\W+/g, '-')}`, async () => {
    const page = s.page;
    await load(page, `${s.url}${query}`, [log], 'noisy run.log');

    // The file's row sums its notes up per reason; the panel's counts agree with the raw text.
    await openView(page, 'inputs');
    const summary = await page.locator('[data-testid=file-row][data-file="noisy run.log"] [data-testid=note-summary]').textContent();
    assert.equal(await page.locator('.inputs img').count(), 0, 'the file list: text, never markup');
    await openView(page, 'notes');
    const notNccl = expected.filter((e) => e.reason === NOT_NCCL).length;
    const looksNccl = expected.filter((e) => e.reason === LOOKS_NCCL).length;
    assert.ok(summary.startsWith(`${NOT_NCCL} ×${notNccl}; `), summary);
    assert.ok(summary.includes(`${LOOKS_NCCL} ×${looksNccl}`), summary);
    assert.ok(summary.includes('per-collective line printed twice (counted twice) ×1'), summary);
    const counts = await kinds(page);
    assert.equal(counts[NOT_NCCL], notNccl);
    assert.equal(counts[LOOKS_NCCL], looksNccl);

    // The whole list, scrolled through: the skipped lines are exactly those of the raw text.
    const list = await listRows(page);
    const total = Number((await page.getByTestId('notes-shown').textContent()).match(/^(\d+) notes$/)[1]);
    console.log(`${list.length} notes listed, ${expected.length} of them skipped lines`);
    assert.equal(list.length, total);
    assert.equal(counts[''], total);
    const skipped = list.filter((r) => r.reason.startsWith('line skipped')).map(({ line, reason, text: t }) => ({ line, reason, text: t }));
    assert.deepEqual(skipped, expected);
    assert.ok(list.every((r) => r.file === 'noisy run.log'));
    const twice = list.filter((r) => r.reason.startsWith('per-collective line printed twice'));
    assert.equal(twice.length, 1);
    assert.match(twice[0].reason, /^per-collective line printed twice \(counted twice\): AllReduce opCount 0 comm 0x/);
    assert.equal(twice[0].severity, 'warning');

    // The download: the same rows, and the notes the native command lists for the file.
    const csv = await notesCsv(page);
    assert.equal(csv.name, 'noisy_run.log.notes.csv');
    assert.deepEqual(csv.rows.map(({ file, line, reason, text: t, severity }) => ({ severity, file, line, reason, text: t })), list);
    const native = nativeSummary([log]).warnings.filter((w) => w.path === log);
    assert.equal(native.length, list.length, 'as many notes as the native command lists');
    native.forEach((w, i) => {
      assert.equal(String(w.line || ''), list[i].line, `note ${i}`);
      assert.ok(w.message.startsWith(list[i].reason), `note ${i}: ${w.message} / ${list[i].reason}`);
    });

    // Markup stays text: in the list, in the note shown whole, in the summary.
    const markup = list.find((r) => r.text.startsWith('<img src=x'));
    assert.ok(markup);
    assert.equal(await page.locator('.notes-panel img, .files img').count(), 0, 'text, never markup');
    await page.getByTestId('notes-list').evaluate((el) => { el.scrollTop = 0; });
    await frames(page);
    const first = page.locator('[data-testid=note-row][data-index="1"]');
    await first.click();
    const picked = page.getByTestId('note-picked');
    assert.equal(await picked.locator('pre').textContent(), list[1].text);
    // From the keyboard too: a row takes the focus, Enter shows it whole.
    await page.locator('[data-testid=note-row][data-index="2"]').focus();
    await page.keyboard.press('Enter');
    await page.locator('[data-testid=note-picked][data-index="2"]').waitFor();
    assert.equal(await picked.locator('pre').textContent(), list[2].text);
    assert.equal(await page.locator('.notes-panel img').count(), 0);

    // One reason at a time: the filter lists exactly that reason's lines.
    await page.locator(`[data-testid=note-kind][data-reason="${LOOKS_NCCL}"]`).click();
    await page.getByTestId('notes-shown').filter({ hasText: `${looksNccl} notes` }).waitFor();
    const filtered = await listRows(page);
    assert.deepEqual(filtered.map(({ line, reason, text: t }) => ({ line, reason, text: t })), expected.filter((e) => e.reason === LOOKS_NCCL));

    // The warnings table: each WARN line's timestamp as printed, sorted by the time it stands for.
    await openView(page, 'warnings');
    const table = page.getByTestId('warning-table');
    await table.waitFor({ timeout: 60_000 });
    const warnRows = () => table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    const lines = text.split('\n');
    const lineOf = (needle) => String(lines.findIndex((l) => l.includes(needle)) + 1);
    assert.deepEqual(await warnRows(), [
      ['noisy run.log', lineOf('Cuda failure'), '[2026-04-28 14:14:51]', 'tpgds-aihub0008:52316', 'Cuda failure \'out of memory\''],
      ['noisy run.log', lineOf('NET/IB : timeout'), '1777000000.250000', 'tpgds-aihub0008:52318', '<img src=x onerror=alert(1)> NET/IB : timeout'],
      ['noisy run.log', lineOf('late warning'), '[2026-04-30 08:00:00]', 'tpgds-aihub0008:52323', 'late warning'],
      ['noisy run.log', lineOf('no time'), '', 'tpgds-aihub0008:52323', 'no time'],
    ]);
    await table.locator('th[data-col="2"]').click();
    assert.deepEqual((await warnRows()).map((r) => r[2]), ['1777000000.250000', '[2026-04-28 14:14:51]', '[2026-04-30 08:00:00]', '']);
    assert.equal(await page.locator('.panels img').count(), 0);
    assert.deepEqual(s.errors, []);
  });
});

test('a log of 400 000 foreign lines: the list reaches its middle and its end, the download every line', { skip: !haveFixtures }, async () => {
  const n = 400_000;
  const base = fs.readFileSync(BASE, 'utf8').split('\n').filter((l) => l !== '');
  const lines = [...base.slice(0, 20)];
  for (let i = 0; i < n; i++) lines.push(`step ${i} loss=${i % 7}`);
  lines.push(...base.slice(20));
  const log = path.join(dir, 'huge.log');
  fs.writeFileSync(log, `${lines.join('\n')}\n`);
  await withScreenshot(s.page, 'notes-huge', async () => {
    const page = s.page;
    await load(page, s.url, [log], 'huge.log');
    const count = (await kinds(page))[NOT_NCCL];
    assert.equal(count, n);
    // The parser quotes the first 100 000 findings' lines and then keeps reasons and line
    // numbers only; the file-level note that says so is last.
    const total = Number((await page.getByTestId('notes-shown').textContent()).match(/^(\d+) notes$/)[1]);
    assert.equal(total, n + 1);

    const box = page.getByTestId('notes-list');
    // Taller than a scroll box may be: the box scrolls by share (app/src/notes.rs).
    assert.ok(await box.evaluate((el) => el.scrollHeight) < total * ROW_PX);
    const rowsShown = () => box.locator('[data-testid=note-row]').evaluateAll((rs) => rs.map((r) => [Number(r.dataset.index), r.children[1].textContent, r.children[3].textContent]));
    const settle = () => page.waitForFunction(() => {
      const el = document.querySelector('[data-testid=notes-list]');
      return el.querySelector('[data-testid=note-row]') && !el.querySelector('[data-testid=note-pending]');
    }, null, { timeout: 30_000 });
    for (const at of [0.5, 1]) {
      await box.evaluate((el, f) => { el.scrollTop = f * (el.scrollHeight - el.clientHeight); }, at);
      await frames(page);
      await settle();
      const rows = await rowsShown();
      for (const [i, line, t] of rows) {
        if (i === n) {
          assert.equal(line, '');
          continue;
        }
        assert.equal(line, String(21 + i), `row ${i}`);
        assert.equal(t, i < 100_000 ? `step ${i} loss=${i % 7}` : '', `row ${i}`);
      }
      if (at === 1) assert.equal(rows.at(-1)[0], n, 'the end of the list shows its last note');
      else assert.ok(rows.some(([i]) => i > 190_000 && i < 210_000), `the middle: ${rows[0]}`);
    }

    const csv = await notesCsv(page);
    assert.equal(csv.rows.length, total);
    for (let i = 0; i < n; i++) {
      const r = csv.rows[i];
      if (r.line !== String(21 + i) || r.reason !== NOT_NCCL) assert.fail(`CSV row ${i}: ${JSON.stringify(r)}`);
    }
    assert.match(csv.rows[n].reason, /^300000 findings about lines are listed without the line's text/);
    assert.deepEqual(s.errors, []);
  });
});
