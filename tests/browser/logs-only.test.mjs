// Logs dropped without any export (issue 4): the page shows per-rank operation counts, bytes per
// operation type, the communicators (with how NCCL set them up) and the topology, each checked
// against the native command's summary or against the logs' own text, and lists the skipped
// lines of a real fixture.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, nativeSummary, allRows, fact, openView, ROOT } from './harness.mjs';

const DEMO = path.join(ROOT, 'target/www-demo/demo');
const FIXTURES = process.env.NCCLSCOPE_REAL_FIXTURES || path.join(ROOT, '../shared/fixtures/real');
const FIXTURE = path.join(FIXTURES, 'nccl/NVIDIA-nccl-tests_issue350_gather_2.16.5_2node.log');

let s;
let native;
let files;
before(async () => {
  files = [path.join(DEMO, 'nccl_debug_combined.log')];
  if (fs.existsSync(FIXTURE)) files.push(FIXTURE);
  else console.log(`# real fixtures absent at ${FIXTURES}: the demo's log alone`);
  native = nativeSummary(files);
  s = await startSession();
  await s.page.goto(s.url);
  await dropFiles(s.page, files);
  await openView(s.page, 'ranks');
  await s.page.getByTestId('rank-row').first().waitFor({ timeout: 120_000 });
  await openView(s.page, 'communicators');
  await s.page.getByTestId('comm-row').first().waitFor();
});
after(async () => { await s?.close(); });

/** Every rank row: its rank and each operation's count (`AllReduce: 12 (1.5 MB)`). */
const rankRows = () => allRows(s.page, 'rank-table', (trs) => trs.map((tr) => ({
  rank: Number(tr.dataset.rank),
  ops: Object.fromEntries([...tr.querySelectorAll('[data-op]')]
    .map((e) => [e.dataset.op, Number(e.querySelector('b').textContent.split(' ')[0])])),
})), (r) => r.rank);

test('per-rank operation counts and bytes per operation type equal the command\'s', async () => {
  await withScreenshot(s.page, 'logs-only-ranks', async () => {
    const rows = await rankRows();
    assert.equal(rows.length, native.ranks.length);
    for (const r of native.ranks) {
      const row = rows.find((x) => x.rank === r.global_rank);
      assert.ok(row, `rank ${r.global_rank}`);
      const want = Object.fromEntries(Object.entries(r.ops_by_type).filter(([, n]) => n > 0));
      assert.deepEqual(row.ops, want, `rank ${r.global_rank} operations`);
    }
    // Bytes per type: the operations view's raw byte columns, summed over ranks.
    await openView(s.page, 'operations');
    const heads = await s.page.locator('[data-testid=ops-table] thead th')
      .evaluateAll((ths) => ths.map((th) => th.firstChild.textContent.trim()));
    const total = await s.page.locator('[data-testid=ops-table] tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))
        .find((r) => r[0] === 'total'));
    assert.ok(total, 'a total row');
    const want = {};
    for (const r of native.ranks) {
      for (const [op, b] of Object.entries(r.bytes_by_type)) want[op] = (want[op] ?? 0) + b;
    }
    for (const [op, b] of Object.entries(want)) {
      if (b === 0) continue;
      const col = heads.indexOf(`${op} bytes`);
      assert.ok(col >= 0, `a ${op} bytes column in ${heads}`);
      assert.equal(Number(total[col]), b, `${op} bytes`);
    }
  });
});

test('communicators: the command\'s, with their channels and transports from the log\'s text', async () => {
  await withScreenshot(s.page, 'logs-only-comms', async () => {
    const rows = await allRows(s.page, 'comm-table', (trs) => trs.map((tr) => ({
      id: tr.dataset.comm,
      size: Number(tr.children[1].textContent),
      setup: tr.querySelector('[data-testid=setup]').textContent,
      transports: tr.querySelector('[data-testid=transports]').textContent,
    })), (r) => r.id);
    assert.deepEqual(rows.map((r) => r.id).sort(), native.communicators.map((c) => c.id).sort());
    // The demo's log names its channel counts (`Channel cc/NN`) and connections (`via T`).
    const text = fs.readFileSync(files[0], 'utf8');
    const counts = new Set([...text.matchAll(/NCCL INFO Channel \d+\/(\d+) : +\d/g)].map((m) => Number(m[1])));
    const kinds = new Set([...text.matchAll(/NCCL INFO Channel \d+\/\d+ : .* via (\S+)/g)]
      .map((m) => m[1].split('/').filter((p) => !/^\d+$/.test(p)).join('/')));
    let withChannels = 0;
    for (const r of rows.filter((x) => x.size > 1)) {
      const n = /^(\d+) channels/.exec(r.setup);
      assert.ok(n, `${r.id}: set-up ${JSON.stringify(r.setup)}`);
      assert.ok(counts.has(Number(n[1])), `${r.id}: ${n[1]} channels is a count the log prints`);
      for (const t of r.transports.split(', ')) {
        assert.ok(kinds.has(t.replace(/ ×\d+$/, '')), `${r.id}: transport ${t}`);
      }
      withChannels++;
    }
    assert.ok(withChannels > 0, 'communicators of several ranks');
  });
});

test('the topology of every host the logs dump, and the skipped lines of the fixture', async () => {
  await withScreenshot(s.page, 'logs-only-topology', async () => {
    const hosts = new Set();
    for (const f of files) {
      for (const m of fs.readFileSync(f, 'utf8').matchAll(/(?:^|\s)(\S+?):\d+:\d+ \[\d+\] NCCL INFO === System/gm)) hosts.add(m[1]);
    }
    await openView(s.page, 'topology');
    const shown = await s.page.locator('.topology-host').evaluateAll((hs) => hs.map((h) => h.dataset.host));
    assert.deepEqual(shown.sort(), [...hosts].sort());
    if (files.length < 2) return;
    // The fixture's foreign lines (nccl-tests' own output) are counted and listed.
    const name = path.basename(FIXTURE);
    const row = s.page.locator(`[data-testid=file-row][data-file="${name}"]`);
    const lines = fs.readFileSync(FIXTURE, 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    const skipped = lines.filter((l) => l.trim() !== '' && !/NCCL (INFO|WARN)|NCCL version/.test(l)).length;
    assert.ok(skipped > 0, 'the fixture has foreign lines');
    assert.equal(Number(await fact(s.page, name, 'skipped lines')), skipped);
    assert.match(await row.getByTestId('note-summary').textContent(), new RegExp(`not an NCCL line ×${skipped}`));
  });
});
