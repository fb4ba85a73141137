// Picking a kernel on the timeline: the details panel shows the kernel's row, the log lines
// matched to it with file and line (checked against the log file itself), the confidence, and
// the same collective on the other ranks with its arrival skew and slowest rank.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, pickCollective, DEMO } from './harness.mjs';


let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

test('a clicked kernel shows its log lines, confidence and the collective across ranks', async () => {
  await withScreenshot(s.page, 'details', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').click();
    await s.page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window,
      null, { timeout: 120_000 });
    await pickCollective(s.page, 0);
    assert.equal(await s.page.locator('[data-detail=rank]').textContent(), '0');
    const confidence = Number(await s.page.locator('[data-detail=confidence]').textContent());
    assert.ok(confidence > 0 && confidence <= 1, `confidence ${confidence}`);

    // Each log line's file:line is that line in the file, and says the op and opCount shown.
    const rows = await s.page.locator('[data-testid=detail-lines] tbody tr').evaluateAll((trs) =>
      trs.map((tr) => [...tr.children].map((td) => td.textContent.trim())));
    assert.ok(rows.length >= 1);
    for (const [op, , opCount, count, , source] of rows) {
      const [file, line] = source.split(':');
      const text = fs.readFileSync(path.join(DEMO, file), 'utf8').split('\n')[Number(line) - 1];
      assert.match(text, new RegExp(`${op}: opCount ${opCount} .*count ${count} `), `${source}: ${text}`);
    }

    // The enriched fields (the exports' columns) of the same kernel.
    const field = (name) => s.page.locator(`[data-testid=detail-fields] [data-field-name="${name}"]`).textContent();
    assert.equal(await field('Op Count (Hex)'), rows[0][2]);
    assert.equal(await field('Match'), 'matched');
    assert.equal(await field('Global Rank'), '0');
    // In the unit its magnitude calls for, the exported figure (GB/s) on hover.
    assert.match(await field('Algo BW (GB/s)'), /^[\d.]+ (TB|GB|MB|KB|B)\/s$/);
    const raw = await s.page.locator('[data-testid=detail-fields] [data-field-name="Algo BW (GB/s)"]').getAttribute('title');
    assert.ok(Number.parseFloat(raw) > 0 && raw.endsWith(' GB/s'), raw);

    // The instance: every member once, rank 0 among them; the skew is the spread of starts.
    const members = await s.page.locator('[data-testid=detail-members] tbody tr').evaluateAll((trs) =>
      trs.map((tr) => ({ rank: Number(tr.dataset.rank), start: parseFloat(tr.children[1].textContent) })));
    assert.ok(members.length >= 2, 'a collective has members on other ranks');
    assert.ok(members.some((m) => m.rank === 0));
    assert.equal(new Set(members.map((m) => m.rank)).size, members.length);
    const spread = Math.max(...members.map((m) => m.start)) - Math.min(...members.map((m) => m.start));
    const text = await s.page.getByTestId('detail-instance').textContent();
    const skew = parseFloat(/arrival skew ([\d.]+) µs/.exec(text)[1]);
    assert.ok(Math.abs(skew - spread) < 0.11, `skew ${skew} vs spread ${spread}`);
    const slowest = Number(/slowest rank (\d+)/.exec(text)[1]);
    assert.equal(members.find((m) => m.start === Math.max(...members.map((x) => x.start))).rank, slowest);
    assert.deepEqual(s.errors, []);
  });
});
