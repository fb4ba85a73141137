// The Diagnosis view's evidence lines and links (issue 31): a planted hang's evidence line opens
// the file's view at that line (the line marked, in view, with the file's own text), and the
// self-contained link carries the findings to a fresh page that has no file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSession, withScreenshot, nativeSummary, openView, dropFiles, demoFiles, NATIVE_BIN, ROOT } from './harness.mjs';

let s;
let dir;
before(async () => {
  s = await startSession();
  nativeSummary(demoFiles()); // builds the native command once
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-hang-'));
  execFileSync(NATIVE_BIN, ['synth', '--layout', 'tp=2,dp=2', '--hang', '3:12', '--out', dir], { cwd: ROOT });
});
after(async () => {
  await s.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const files = () => fs.readdirSync(dir).filter((f) => /\.(log|sqlite)$/.test(f)).map((f) => path.join(dir, f));

/** Line `n` (1-based) of the generated file `name`, as the page shows it. */
const lineOf = (name, n) => fs.readFileSync(path.join(dir, name), 'utf8').split('\n')[n - 1].replace(/\r$/, '');

test('an evidence line opens the file at that line, and the link carries the finding', async () => {
  let url;
  let message;
  let evidence;
  await withScreenshot(s.page, 'diagnosis-evidence', async () => {
    await s.page.goto(s.url);
    await dropFiles(s.page, files());
    await openView(s.page, 'diagnosis');
    await s.page.getByTestId('diagnosis').waitFor({ timeout: 120_000 });
    const first = s.page.locator('[data-testid=diagnosis-finding]').first();
    assert.equal(await first.getAttribute('data-kind'), 'behind');
    message = (await first.locator('td').nth(5).textContent()).trim();
    // Once the worker read the evidence lines' text, the buttons carry it (their title).
    await s.page.waitForFunction(() => {
      const b = document.querySelector('[data-testid=diagnosis-finding] [data-testid=evidence]');
      return b && b.title !== 'Open the file at this line';
    }, null, { timeout: 60_000 });
    const button = first.getByTestId('evidence').first();
    evidence = (await button.textContent()).trim();
    const [, name, n] = evidence.match(/^(.*):(\d+)$/);
    const line = Number(n);
    assert.equal(await button.getAttribute('title'), lineOf(name, line), 'the finding carries the line');
    await button.click();

    // The file's view: the lines around it, the evidence line marked, in view, as the file has it.
    const view = s.page.getByTestId('file-lines');
    const hit = view.getByTestId('file-line-hit');
    await hit.waitFor({ timeout: 60_000 });
    assert.equal(await hit.getAttribute('data-line'), String(line));
    assert.equal(await hit.locator('code').textContent(), lineOf(name, line));
    const numbers = await view.locator('li').evaluateAll((lis) => lis.map((li) => Number(li.dataset.line)));
    assert.equal(numbers[0], Math.max(1, line - 20));
    assert.ok(numbers.length <= 41 && numbers.includes(line), `${numbers}`);
    // Scrolled into view: inside its box, and the box scrolled (the line is past the box's
    // first screenful).
    await s.page.waitForFunction(() => {
      const el = document.querySelector('[data-testid=file-line-hit]');
      const box = el.closest('.file-lines-box');
      const [b, r] = [box.getBoundingClientRect(), el.getBoundingClientRect()];
      return r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
    }, null, { timeout: 5_000 });
    if (line > 30) assert.ok(await view.locator('.file-lines-box').evaluate((b) => b.scrollTop > 0), 'scrolled');

    // The overview card's evidence opens the same view.
    await openView(s.page, 'overview');
    await s.page.getByTestId('overview-evidence').first().click();
    await s.page.locator('[data-testid=view][data-view="diagnosis"]').waitFor();
    await s.page.getByTestId('file-line-hit').waitFor({ timeout: 60_000 });

    // A self-contained link with the findings.
    await s.page.getByTestId('copy-diagnosis-link').click();
    url = await s.page.getByTestId('share-link').inputValue();
    assert.match(new URL(url).hash, /[#&]dx=/);
    assert.doesNotMatch(new URL(url).hash, /[#&]f=/, 'no files needed');
    assert.deepEqual(s.errors, []);
  });

  // A fresh page with no file: the finding's sentence, marked as the link's.
  const b = await startSession();
  try {
    await withScreenshot(b.page, 'diagnosis-link-open', async () => {
      await b.page.goto(b.url + new URL(url).hash);
      await b.page.getByTestId('link-diagnosis').waitFor({ timeout: 60_000 });
      const sentences = await b.page.getByTestId('link-finding').allTextContents();
      assert.ok(sentences.some((t) => t.includes(message)), `${sentences}`);
      // (No file, no view bar: the banner opens the Diagnosis view.)
      await b.page.getByTestId('link-diagnosis-open').click();
      await b.page.locator('[data-testid=view][data-view="diagnosis"] [data-testid=diagnosis-from-link]').waitFor();
      assert.equal((await b.page.getByTestId('diagnosis-headline').textContent()).trim(), message);
      // Its evidence line: the file is not here, so the line as the link carries it.
      const button = b.page.locator('[data-testid=diagnosis-finding] [data-testid=evidence]').first();
      assert.equal((await button.textContent()).trim(), evidence);
      await button.click();
      await b.page.getByTestId('file-lines-note').waitFor();
      assert.match(await b.page.getByTestId('file-lines-note').textContent(), /not loaded/);
      const [, name, n] = evidence.match(/^(.*):(\d+)$/);
      assert.equal(await b.page.getByTestId('file-line-hit').locator('code').textContent(), lineOf(name, Number(n)));
      assert.equal(await b.page.locator('[data-testid=file-row]').count(), 0);
      assert.deepEqual(b.errors, []);
    });
  } finally {
    await b.close();
  }
});

// The file view scrolls its marked line into view on the next animation frame; a view switch
// (or the Diagnosis view redrawn by a late analysis) before that frame disposes the view, and the
// frame must then do nothing rather than touch what was disposed (a CI run once panicked there).
test('the file view gone before its next frame leaves no error', async () => {
  await s.page.goto(s.url);
  await dropFiles(s.page, files());
  await openView(s.page, 'diagnosis');
  await s.page.getByTestId('diagnosis').waitFor({ timeout: 120_000 });
  const before = s.errors.length;
  for (let round = 0; round < 3; round++) {
    await openView(s.page, 'diagnosis');
    await s.page.locator('[data-testid=diagnosis-finding] [data-testid=evidence]').first().waitFor();
    // In one task: open the file view, let its effect run (microtasks), switch views; the
    // frame the effect asked for comes after the switch.
    const frames = await s.page.evaluate(async () => {
      document.querySelector('[data-testid=diagnosis-finding] [data-testid=evidence]').click();
      for (let i = 0; i < 20; i++) await Promise.resolve();
      document.querySelector('[data-testid=view-overview]').click();
      // Two frames: the one asked for before the switch has run by then.
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      return document.querySelector('[data-testid=view]').dataset.view;
    });
    assert.equal(frames, 'overview');
  }
  assert.deepEqual(s.errors.slice(before), []);
});
