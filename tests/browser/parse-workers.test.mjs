// Loading on several Web Workers (issue 11): the loading worker hands each log and export of a
// load to a helper worker (the same helpers that align) and adds the parsed logs and read
// exports to the session in the order of the drop, logs renumbered to their place. Where a file
// is loaded must not change anything:
// with `?parse-workers=3&align-workers=3` the page's every enriched kernel (the kernels CSV),
// the rank table, every file's row (facts, notes per reason, the records digest of `?digest`)
// and every file's notes (the notes panel's download: line numbers, reasons, texts) equal those
// with `?parse-workers=0&align-workers=0` (everything in the loading worker), for the demo run and generator runs with several logs: plain, gzip-compressed
// with a garbled and truncated log, and with a refused file before the logs (so a log's place
// in the session is not its place in the drop). A helper that fails mid-job (an uncaught error,
// or bytes cut short) changes nothing either: its file is loaded in the loading worker, and the
// console says so as a warning. With `?parse-share` the loading worker loads beside the helper,
// as it does by default (files no helper took, and files ahead of their turn while it waits).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { startSession, withScreenshot, dropFiles, ROOT, NATIVE_BIN, demoFiles, rankTable, download, allRows, openView } from './harness.mjs';

const made = [];

/** A generator preset's run written by the native command: its logs and exports, sorted. */
function generated(preset) {
  execFileSync('cargo', ['build', '-q', '-p', 'ncclscope-cli'], { cwd: ROOT, stdio: 'inherit' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ncclscope-parse-${preset}-`));
  made.push(dir);
  execFileSync(NATIVE_BIN, ['synth', '--preset', preset, '--out', dir], { cwd: ROOT });
  return fs.readdirSync(dir).filter((f) => /\.(log|sqlite)$/.test(f)).sort().map((f) => path.join(dir, f));
}

/**
 * tp2pp2 made harder: every other log gzip-compressed, one log garbled (binary and cut lines
 * in its middle) and cut short mid-line, and a file that is no log before them all (refused
 * without a place in the session).
 */
function mangled() {
  const files = generated('tp2pp2');
  const dir = path.dirname(files[0]);
  const out = [];
  const junk = path.join(dir, '0-notes.log');
  fs.writeFileSync(junk, Buffer.from([0, 159, 146, 150, 1, 2, 3, 255]).toString('latin1').repeat(4096), 'latin1');
  out.push(junk);
  let logs = 0;
  for (const f of files) {
    if (!f.endsWith('.log')) { out.push(f); continue; }
    const bytes = fs.readFileSync(f);
    if (logs === 1) {
      const lines = bytes.toString('latin1').split('\n');
      const mid = lines.length >> 1;
      lines.splice(mid, 0, '\u0000\u00ff\u00fe garbage', lines[mid + 3].slice(0, 25), 'NCCL INFO not a line ncclscope knows');
      const cut = lines.join('\n');
      const g = path.join(dir, `garbled-${path.basename(f)}`);
      fs.writeFileSync(g, Buffer.from(cut.slice(0, cut.length - 40), 'latin1'));
      out.push(g);
    } else if (logs % 2 === 0) {
      const gz = `${f}.gz`;
      fs.writeFileSync(gz, zlib.gzipSync(bytes));
      out.push(gz);
    } else {
      out.push(f);
    }
    logs += 1;
  }
  return out;
}

/** Every file row of the page as text (facts, notes per reason, digest; not the load time). */
const fileRows = (page) => allRows(page, 'file-list', (trs) => trs.map((tr) => `${tr.dataset.file}: ${tr.textContent}`),
  (r) => r.slice(0, r.indexOf(': ')));

/** Loads `files` with the URL query `query` (and `?digest`); returns what the page shows. */
async function analyse(s, files, query) {
  await s.page.goto(`${s.url}?digest&${query}`);
  await dropFiles(s.page, files);
  const line = s.page.getByTestId('analysis-status');
  await line.filter({ hasText: /^Analysed in/ }).waitFor({ timeout: 120_000 });
  return {
    status: await line.textContent(),
    rows: await fileRows(s.page),
    notes: await fileNotes(s.page),
    ranks: await rankTable(s.page),
    csv: (await download(s.page, 'download-csv')).bytes.toString('utf8'),
  };
}

/** Every file's notes as the notes panel downloads them (CSV), by file name. */
async function fileNotes(page) {
  const notes = {};
  await openView(page, 'notes');
  const select = page.getByTestId('notes-file');
  if (!(await select.count())) return notes;
  const options = await select.locator('option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
  for (const [value, label] of options) {
    await select.selectOption(value);
    notes[label.replace(/ \(\d+ notes\)$/, '')] = (await download(page, 'notes-download')).bytes.toString('utf8');
  }
  return notes;
}

const ALONE = 'parse-workers=0&align-workers=0';
const HELPED = 'parse-workers=3&align-workers=3';

/** The same page either way: every kernel, every rank, every file's report. */
function assertSame(helped, alone, name) {
  assert.ok(alone.ranks.length >= 4, `${name}: ${alone.ranks.length} ranks`);
  assert.deepEqual(helped.ranks, alone.ranks, `${name}: rank table`);
  assert.deepEqual(helped.rows, alone.rows, `${name}: file reports`);
  assert.deepEqual(helped.notes, alone.notes, `${name}: every file's notes`);
  const rows = alone.csv.trim().split('\n');
  assert.ok(rows.length > 100, `${name}: ${rows.length} CSV rows`);
  assert.equal(helped.csv, alone.csv, `${name}: every enriched kernel is the same`);
}

let s;
before(async () => { s = await startSession(); });
after(async () => {
  await s?.close();
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

/** How many of `files` are logs or exports (the refused file is neither). */
const loadable = (files) => files.filter((f) => /\.(log|log\.gz|sqlite)$/.test(f) && !f.endsWith('0-notes.log')).length;

for (const [name, files] of [['demo', demoFiles], ['tp2pp2', () => generated('tp2pp2')],
  ['tp2pp2 gzip, garbled, refused', mangled]]) {
  test(`${name}: logs and exports loaded on three workers give what the loading worker alone gives`, async () => {
    const inputs = files();
    await withScreenshot(s.page, `parse-workers-${name.replace(/\W+/g, '-')}`, async () => {
      const alone = await analyse(s, inputs, ALONE);
      const helped = await analyse(s, inputs, HELPED);
      assert.match(alone.status, new RegExp(`^Analysed in \\d+ ms: read ${inputs.length} files in \\d+ ms; re-aligned`));
      // Every log and export went through a helper (three are started; a fast one may load
      // two files before the last one is ready), and the same helpers then aligned.
      const n = loadable(inputs);
      assert.ok(inputs.some((f) => f.endsWith('.sqlite')), `${name}: exports among the files`);
      const parsed = helped.status.match(/\((\d+) of (\d+) files? read on (\d) workers?\)/);
      assert.ok(parsed, helped.status);
      assert.deepEqual([+parsed[1], +parsed[2]], [n, n], helped.status);
      assert.ok(+parsed[3] >= 1 && +parsed[3] <= Math.min(3, n), helped.status);
      assert.match(helped.status, /\(aligned in \d+ ms on 3 workers\)$/);
      assertSame(helped, alone, name);
      if (name.includes('garbled')) {
        // The refused file and the garbled log's notes (with their line numbers) are in the
        // reports compared above.
        const row = (re) => alone.rows.find((r) => re.test(r));
        assert.match(row(/^0-notes\.log: /) ?? '', /error: 0-notes\.log: neither/s);
        assert.match(row(/^garbled-/) ?? '', /skipped lines: [1-9].*line skipped: /s);
        const garbled = Object.entries(alone.notes).find(([f]) => f.startsWith('garbled-'));
        assert.ok(garbled, Object.keys(alone.notes).join(', '));
        assert.match(garbled[1], /\r\ngarbled-nccl_debug_\w+\.log,\d+,(info|warning),line skipped: /);
        assert.ok(alone.rows.filter((r) => /^[^:]*\.log\.gz: .*loaded/s.test(r)).length >= 1, 'gzip logs load');
      }
      assert.deepEqual(s.errors, []);
    });
  });
}

test('the loading worker parsing beside one helper (as by default) gives the same too', async () => {
  // The exports first (the loading worker reads them while the helper starts and takes the
  // largest log), then the logs, the largest first: when the walk reaches that log it is on
  // the helper, and the loading worker parses the next logs ahead of their turn meanwhile.
  const files = generated('tp2pp2');
  const size = (f) => fs.statSync(f).size;
  const logs = files.filter((f) => f.endsWith('.log')).sort((a, b) => size(b) - size(a));
  const inputs = [...files.filter((f) => f.endsWith('.sqlite')), ...logs];
  await withScreenshot(s.page, 'parse-workers-shared', async () => {
    const alone = await analyse(s, inputs, ALONE);
    const shared = await analyse(s, inputs, 'parse-workers=1&parse-share&align-workers=3');
    console.log(shared.status);
    const parsed = shared.status.match(new RegExp(`^Analysed in \\d+ ms: read \\d+ files in \\d+ ms(?: \\((\\d+) of ${loadable(inputs)} files read on 1 worker(?:, (\\d+) ahead by the loading worker)?\\))?;`));
    assert.ok(parsed, shared.status);
    assertSame(shared, alone, 'shared');
    assert.deepEqual(s.errors, []);
  });
});

for (const fault of ['crash', 'bytes']) {
  test(`a parsing worker that fails (${fault}) has its file loaded by the loading worker`, async () => {
    const inputs = generated('tp2pp2');
    await withScreenshot(s.page, `parse-workers-fault-${fault}`, async () => {
      const alone = await analyse(s, inputs, ALONE);
      const warnings = [];
      const onConsole = (m) => { if (m.type() === 'warning') warnings.push(m.text()); };
      s.page.on('console', onConsole);
      // The helper given the first job (the most work) fails: it dies with an uncaught error
      // after its first slice, or answers with its bytes cut short.
      const faulty = await analyse(s, inputs, `${HELPED}&parse-fault=${fault}`);
      s.page.off('console', onConsole);
      const failures = warnings.filter((w) => /^parsing worker \d+: .* is loaded in the loading worker$/.test(w));
      assert.equal(failures.length, 1, warnings.join('\n'));
      assert.match(failures[0], fault === 'crash' ? /parse fault/ : /not a (parsed log|read export)/);
      const n = loadable(inputs);
      assert.match(faulty.status, new RegExp(`\\(${n - 1} of ${n} files read on \\d workers?\\)`));
      assertSame(faulty, alone, `fault ${fault}`);
      // The helper's failure is a warning, never a page error.
      assert.deepEqual(s.errors, []);
    });
  });
}
