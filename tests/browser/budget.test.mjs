// Inputs larger than the tab can hold are not a crash (issue 11): before loading, the page
// estimates the worker memory the dropped files need and, above the limit, offers a subset or
// the native command. The limit is lowered through `?memory-limit-mb=1` so that the demo's
// files (about 0.84 MB) exceed it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, demoFiles, openView } from './harness.mjs';


let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

test('files over the memory limit are offered as a subset, not loaded into a crash', async () => {
  await withScreenshot(s.page, 'budget', async () => {
    await s.page.goto(`${s.url}?memory-limit-mb=1`);
    await dropFiles(s.page, demoFiles());
    await s.page.getByTestId('budget').waitFor();
    assert.equal(await s.page.locator('[data-testid=file-row]').count(), 0, 'nothing loaded yet');
    // (The file rows are in the Inputs view, whose tab the bar shows once files are loaded.)
    assert.equal(await s.page.getByTestId('view-bar').count(), 0, 'nothing loaded yet');
    const listed = await s.page.locator('[data-testid=budget-file]').evaluateAll((lis) => lis.map((l) => l.dataset.file));
    assert.deepEqual(listed, demoFiles().map((f) => path.basename(f)));
    assert.match(await s.page.getByTestId('budget-command').textContent(), /^ncclscope analyze .*nccl_debug_combined\.log/);
    // Everything checked is over the limit; without the log (2 bytes a byte) the exports fit.
    assert.ok(await s.page.getByTestId('budget-load').isDisabled());
    const log = s.page.locator('[data-testid=budget-file][data-file$=".log"] input');
    await log.uncheck();
    assert.ok(await s.page.getByTestId('budget-load').isEnabled());
    await s.page.getByTestId('budget-load').click();
    await s.page.getByTestId('budget').waitFor({ state: 'detached' });
    await openView(s.page, 'inputs');
    const rows = s.page.locator('[data-testid=file-row]');
    await rows.first().waitFor();
    const names = await rows.evaluateAll((rs) => rs.map((r) => r.dataset.file));
    assert.deepEqual(names, demoFiles().filter((f) => f.endsWith('.sqlite')).map((f) => path.basename(f)));
    for (const n of names) {
      await s.page.locator(`[data-testid=file-row][data-file="${n}"] [data-testid=status]`)
        .filter({ hasText: /^loaded/ }).waitFor({ timeout: 60_000 });
    }
    // Under the default limit the same drop loads at once.
    await s.page.goto(s.url);
    await dropFiles(s.page, demoFiles());
    await openView(s.page, 'inputs');
    await s.page.locator('[data-testid=file-row]').nth(2).waitFor({ timeout: 60_000 });
    assert.equal(await s.page.getByTestId('budget').count(), 0);
    assert.deepEqual(s.errors, []);
  });
});

/**
 * Drops files of the given names and sizes made in the page without writing them anywhere: each
 * is one 1 MiB blob of zeros repeated (a Blob built of other Blobs refers to them, it does not
 * copy), so a 2 GB file costs the test 1 MiB. The budget is decided from names and sizes alone.
 */
async function dropSized(page, files) {
  await page.getByTestId('load-demo').waitFor();
  await page.evaluate((items) => {
    const MiB = 1 << 20;
    const chunk = new Blob([new Uint8Array(MiB)]);
    const dt = new DataTransfer();
    for (const { name, size } of items) {
      const parts = [];
      for (let left = size; left > 0; left -= MiB) parts.push(left >= MiB ? chunk : chunk.slice(0, left));
      dt.items.add(new File(parts, name));
    }
    const target = document.querySelector('.page') || document.body;
    target.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, files);
}

test('a 2 GB PyTorch trace is refused up front with the command; eight ranks of 150 MB load', async () => {
  await withScreenshot(s.page, 'budget-traces', async () => {
    const GB = 1e9;
    const MB = 1e6;
    await s.page.goto(s.url);
    await dropSized(s.page, [{ name: 'rank0.pt.trace.json', size: 2 * GB }]);
    await s.page.getByTestId('budget').waitFor();
    assert.equal(await s.page.getByTestId('budget-command').textContent(), 'ncclscope analyze rank0.pt.trace.json --json summary.json');
    assert.ok(await s.page.getByTestId('budget-load').isDisabled(), 'the one file is over the limit');
    assert.equal(await s.page.getByTestId('budget-basis').count(), 0, 'an uncompressed trace: no expansion assumed');
    assert.equal(await s.page.getByTestId('view-bar').count(), 0, 'nothing loaded');
    // Compressed, the estimate is from the compressed size times an expansion the page states.
    await s.page.goto(s.url);
    await dropSized(s.page, [{ name: 'rank0.pt.trace.json.gz', size: 2 * GB / 15 }]);
    await s.page.getByTestId('budget').waitFor();
    assert.match(await s.page.getByTestId('budget-basis').textContent(), /compressed: estimated as about \d+× its size once expanded/);
    assert.match(await s.page.getByTestId('budget-file').textContent(), /about [\d.]+ GB in memory/);
    // Eight ranks of 150 MB go straight to the worker.
    await s.page.goto(s.url);
    const eight = Array.from({ length: 8 }, (_, r) => ({ name: `rank${r}.pt.trace.json`, size: 150 * MB }));
    await dropSized(s.page, eight);
    await openView(s.page, 'inputs');
    await s.page.locator('[data-testid=file-row]').nth(7).waitFor({ timeout: 60_000 });
    assert.equal(await s.page.getByTestId('budget').count(), 0);
    const names = await s.page.locator('[data-testid=file-row]').evaluateAll((rs) => rs.map((r) => r.dataset.file));
    assert.deepEqual(names, eight.map((f) => f.name));
  });
});
