// The site served under a sub-path, as an internal GitHub Pages host serves it
// (`https://host/team/ncclscope/`): the page, its worker, sql.js and the demo all load from
// relative URLs, and a whole session (load, drop, analyse, compare with theory, share) sends nothing:
// every request stays under the sub-path of the page's origin, is a GET, and carries no body.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import { startSession, withScreenshot, dropFiles, fact, nativeSummary, openView, openMenuOf, NATIVE_BIN, FIXTURES, download, demoFiles } from './harness.mjs';

const PREFIX = '/team/ncclscope/';
const haveFixtures = fs.existsSync(path.join(FIXTURES, 'nsys'));

let s;
before(async () => { s = await startSession({ prefix: PREFIX }); });
after(async () => { await s?.close(); });

test('a whole session under a sub-path requests nothing outside it and uploads nothing', async () => {
  await withScreenshot(s.page, 'subpath-session', async () => {
    assert.ok(s.url.endsWith(PREFIX));
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').click();
    await openView(s.page, 'theory');
    await s.page.getByTestId('theory-table').waitFor({ timeout: 60_000 });
    await openView(s.page, 'communicators');
    await s.page.getByTestId('comm-table').waitFor();
    if (haveFixtures) {
      const log = path.join(FIXTURES, 'nccl', 'pytorch-torchtitan_issue1369_tp-collectives_coll-2ranks.log');
      const db = path.join(FIXTURES, 'nsys', 'GindaChen-nsys-ai_mfu_2gpu_before.sqlite');
      await dropFiles(s.page, [log, db]);
      assert.ok(Number(await fact(s.page, path.basename(log), 'NCCL operations')) > 0);
      assert.ok(Number(await fact(s.page, path.basename(db), 'NCCL kernels')) > 0);
    }
    await openView(s.page, 'theory');
    await s.page.getByTestId('theory-apply').click();
    await s.page.getByTestId('theory-table').waitFor();
    // Share: a link to the view (fingerprints), a window aggregate and its self-contained link,
    // and a bundle: all made in the tab.
    await s.page.getByTestId('copy-link').click();
    await s.page.getByTestId('share-link').waitFor({ timeout: 60_000 });
    assert.ok((await s.page.getByTestId('share-link').inputValue()).startsWith(`${s.origin}${PREFIX}#v=1&`));
    await openView(s.page, 'timeline');
    await s.page.getByTestId('aggregate-window').click();
    await s.page.getByTestId('window-aggregate').waitFor({ timeout: 60_000 });
    await s.page.getByTestId('copy-summary-link').click();
    await openMenuOf(s.page, 'export-bundle');
    const [bundle] = await Promise.all([s.page.waitForEvent('download'), s.page.getByTestId('export-bundle').click()]);
    assert.ok(fs.statSync(await bundle.path()).size > 100_000);

    assert.ok(s.sent.length > 0);
    const base = `${s.origin}${PREFIX}`;
    const outside = s.sent.filter((r) => !r.url.startsWith(base) && !r.url.startsWith('blob:') && !r.url.startsWith('data:'));
    assert.deepEqual(outside, [], 'requests outside the sub-path or the origin');
    // The worker, sql.js and the demo's files came from under the sub-path.
    for (const want of ['sql-wasm.wasm', 'sql-wasm.js', 'sql-batch.js', 'demo/MANIFEST']) {
      assert.ok(s.sent.some((r) => r.url === `${base}${want}`), `${want} from ${base}`);
    }
    const uploads = s.sent.filter((r) => r.method !== 'GET' || r.body > 0);
    assert.deepEqual(uploads, [], 'no request but GETs without a body');
    assert.deepEqual(s.errors, []);
  });
});

test('after the first visit the page works offline, demo included', async () => {
  await withScreenshot(s.page, 'offline', async () => {
    await s.page.goto(s.url);
    // The service worker controls the page once it has activated (claim) and a load went through it.
    await s.page.evaluate(() => navigator.serviceWorker.ready);
    await s.page.reload();
    await s.page.waitForFunction(() => navigator.serviceWorker.controller !== null);
    await s.page.getByTestId('load-demo').click();
    await openView(s.page, 'theory');
    await s.page.getByTestId('theory-table').waitFor({ timeout: 60_000 });
    assert.match(await s.page.getByTestId('privacy').textContent(), /works offline/);

    await s.page.context().setOffline(true);
    try {
      await s.page.reload();
      await s.page.getByTestId('load-demo').click();
      await openView(s.page, 'theory');
      await s.page.getByTestId('theory-table').waitFor({ timeout: 60_000 });
      await openView(s.page, 'communicators');
      await s.page.getByTestId('comm-table').waitFor();
    } finally {
      await s.page.context().setOffline(false);
    }
  });
});

test('the Chrome trace and the CSV download from the page equal the command\'s', async () => {
  await withScreenshot(s.page, 'downloads', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').click();
    await openView(s.page, 'communicators');
    await s.page.getByTestId('comm-table').waitFor({ timeout: 60_000 });
    const before = s.sent.length;
    const save = async (testId) => (await download(s.page, testId)).bytes.toString('utf8');
    const trace = JSON.parse(await save('download-trace'));
    const csv = await save('download-csv');
    // The same files from the command, on the demo run's files.
    const files = demoFiles();
    nativeSummary(files); // builds the command once
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-dl-'));
    execFileSync(NATIVE_BIN, ['analyze', '--chrome-trace', path.join(dir, 't.json'), '--csv', path.join(dir, 'k.csv'), ...files]);
    const nativeTrace = JSON.parse(fs.readFileSync(path.join(dir, 't.json'), 'utf8'));
    const nativeCsv = fs.readFileSync(path.join(dir, 'k.csv'), 'utf8');
    fs.rmSync(dir, { recursive: true, force: true });
    const kernels = (t) => t.traceEvents.filter((e) => e.cat === 'nccl');
    assert.equal(kernels(trace).length, kernels(nativeTrace).length);
    assert.deepEqual(kernels(trace).map((e) => [e.pid, e.ts, e.args['Op Count (Hex)']]),
      kernels(nativeTrace).map((e) => [e.pid, e.ts, e.args['Op Count (Hex)']]));
    // Cell by cell; floats may differ in their last digit (wasm's and the native libm's `exp`).
    const rows = (t) => t.split('\r\n').map((r) => r.split(','));
    const [ours, theirs] = [rows(csv), rows(nativeCsv)];
    assert.equal(ours.length, theirs.length);
    ours.forEach((row, i) => row.forEach((cell, j) => {
      const other = theirs[i][j];
      const same = cell === other
        || (Number.isFinite(Number(cell)) && Math.abs(Number(cell) - Number(other)) <= 1e-12 * Math.max(1, Math.abs(Number(other))));
      assert.ok(same, `CSV row ${i} column ${theirs[0][j]}: ${cell} vs ${other}`);
    }));
    // Saving went through blob: URLs only.
    assert.deepEqual(s.sent.slice(before).filter((r) => !r.url.startsWith('blob:')).filter((r) => r.method !== 'GET'), []);
    assert.deepEqual(s.errors, []);
  });
});
