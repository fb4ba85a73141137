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
