// A 1024-rank run through the per-node path and the page (issue 11): the generator's huge-1024
// preset is analysed as 128 per-node jobs (`analyze --aggregate`), merged (`aggregate merge`),
// and the run aggregate dropped on the page. The overview must list every rank with the
// generator's truth (kernels, operations and bytes per type), the communicators with their true
// parallelism, and a rank's detail must open on demand with that rank's kernels. Per-node files
// dropped together are merged by the page itself, to the same overview. A cut or garbled
// aggregate is an error naming the file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { startSession, withScreenshot, dropFiles, NATIVE_BIN, ROOT, allRows, findRow, openView } from './harness.mjs';

const run = promisify(execFile);
let s;
let dir;
let truth;
let shown; // `ncclscope aggregate show` of the merged file: what the page must say
let runAgg;
let perNode;

/** `cmd` over `items`, `width` at a time. */
async function pool(items, width, cmd) {
  const queue = [...items];
  await Promise.all(Array.from({ length: width }, async () => {
    while (queue.length) await cmd(queue.shift());
  }));
}

before(async () => {
  execFileSync('cargo', ['build', '-q', '-p', 'ncclscope-cli'], { cwd: ROOT, stdio: 'inherit' });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-agg-'));
  const runDir = path.join(dir, 'run');
  execFileSync(NATIVE_BIN, ['synth', '--preset', 'huge-1024', '--out', runDir]);
  truth = JSON.parse(fs.readFileSync(path.join(runDir, 'truth.json'), 'utf8'));
  const hosts = fs.readdirSync(runDir).map((f) => f.match(/^report_(.+)\.sqlite$/)?.[1]).filter(Boolean).sort();
  assert.equal(hosts.length, 128);
  const out = path.join(dir, 'out');
  fs.mkdirSync(out);
  const files = fs.readdirSync(runDir);
  // One job per node, as a Slurm array would run them.
  await pool(hosts, Math.max(2, os.cpus().length), async (h) => {
    const inputs = files.filter((f) => f.startsWith(`nccl_debug_${h}_`) || f === `report_${h}.sqlite`)
      .map((f) => path.join(runDir, f));
    await run(NATIVE_BIN, ['analyze', '--aggregate', path.join(out, `${h}.agg`), ...inputs]);
  });
  perNode = hosts.map((h) => path.join(out, `${h}.agg`));
  runAgg = path.join(dir, 'run.agg');
  execFileSync(NATIVE_BIN, ['aggregate', 'merge', '--out', runAgg, out]);
  shown = JSON.parse(execFileSync(NATIVE_BIN, ['aggregate', 'show', runAgg], { maxBuffer: 1 << 28 }).toString());
  console.log(`huge-1024: run aggregate ${fs.statSync(runAgg).size} bytes, per-node aggregates ${perNode.reduce((a, f) => a + fs.statSync(f).size, 0)} bytes in all`);
  s = await startSession();
});
after(async () => {
  await s?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * Every rank row of the aggregate's table (scrolled through: only the rows in its box are in
 * the document): its data attributes and its operation facts.
 */
const rankRows = (page) => allRows(page, 'agg-rank-table', (trs) => trs.map((tr) => ({
  rank: Number(tr.dataset.rank),
  kernels: Number(tr.dataset.kernels),
  matched: Number(tr.dataset.matched),
  host: tr.children[1].textContent,
  pid: Number(tr.children[2].textContent),
  ops: Object.fromEntries([...tr.querySelectorAll('[data-op]')].map((e) => [e.dataset.op, [Number(e.dataset.count), Number(e.dataset.bytes)]])),
})), (r) => r.rank, page.getByTestId('aggregate'));

/** Every communicator row of the aggregate (scrolled through). */
const commRows = (page) => allRows(page, 'comm-table', (trs) => trs.map((tr) => ({
  id: tr.dataset.comm,
  ranks: tr.children[2].textContent.split(' ').map(Number),
  parallelism: tr.querySelector('[data-testid=parallelism]').textContent,
})), (r) => r.id, page.getByTestId('aggregate'));

/** Waits for the overview of `ranks` ranks; returns the milliseconds from `since`. */
async function overviewShown(page, ranks, since) {
  await page.locator(`[data-testid=aggregate][data-ranks="${ranks}"] table[data-testid=agg-rank-table][aria-rowcount="${ranks + 1}"] [data-testid=agg-rank-row]`)
    .first().waitFor({ timeout: 120_000 });
  return Date.now() - since;
}

test('the huge-1024 run aggregate opens with every rank, operation and communicator of the truth', async () => {
  await withScreenshot(s.page, 'aggregate-overview', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').waitFor();
    const t0 = Date.now();
    await dropFiles(s.page, [runAgg]);
    const ms = await overviewShown(s.page, 1024, t0);
    console.log(`huge-1024: overview shown ${ms} ms after the drop (worker read and decoded it in ${await s.page.getByTestId('aggregate').getAttribute('data-load-ms')} ms)`);

    const rows = await rankRows(s.page);
    assert.equal(rows.length, truth.ranks.length);
    const byRank = new Map(rows.map((r) => [r.rank, r]));
    for (const t of truth.ranks) {
      const r = byRank.get(t.global_rank);
      assert.ok(r, `rank ${t.global_rank} is listed`);
      assert.equal(r.host, t.host, `rank ${t.global_rank} host`);
      assert.equal(r.pid, t.pid, `rank ${t.global_rank} pid`);
      assert.equal(r.kernels, t.kernels, `rank ${t.global_rank} kernels`);
      assert.equal(r.matched, t.matched_ops, `rank ${t.global_rank} matched`);
      for (const [op, n] of Object.entries(t.ops_by_type)) {
        const [count, bytes] = r.ops[op] ?? [0, 0];
        assert.equal(count, n, `rank ${t.global_rank} ${op}`);
        assert.equal(bytes, t.bytes_by_type[op], `rank ${t.global_rank} ${op} bytes`);
      }
    }
    // Run totals: the sum of the truth's ranks.
    const total = (k) => s.page.locator(`[data-testid=agg-totals] [data-total="${k}"] dd`).textContent();
    assert.equal(Number(await total('ranks')), 1024);
    assert.equal(Number(await total('hosts')), 128);
    assert.equal(Number(await total('NCCL kernels')), truth.ranks.reduce((a, r) => a + r.kernels, 0));
    const opRows = await s.page.getByTestId('agg-op-row').evaluateAll((trs) => trs.map((tr) => [tr.dataset.op, Number(tr.dataset.count), Number(tr.dataset.bytes)]));
    for (const [op, count, bytes] of opRows) {
      assert.equal(count, truth.ranks.reduce((a, r) => a + r.ops_by_type[op], 0), op);
      assert.equal(bytes, truth.ranks.reduce((a, r) => a + r.bytes_by_type[op], 0), `${op} bytes`);
    }
    assert.deepEqual(opRows.map((r) => r[0]).sort(), Object.entries(shown.totals.ops_by_type).map(([k]) => k).sort());

    // Communicators: every one of the truth, with its members and its parallelism.
    const comms = await commRows(s.page);
    assert.equal(comms.length, truth.communicators.length);
    const ours = new Map(comms.map((c) => [c.id, c]));
    for (const c of truth.communicators) {
      const o = ours.get(c.id);
      assert.ok(o, `communicator ${c.id}`);
      assert.deepEqual(o.ranks, [...c.global_ranks].sort((a, b) => a - b), `${c.id} members`);
      assert.equal(o.parallelism, c.parallelism, `${c.id} parallelism`);
    }
    const l = truth.layout;
    assert.match(await s.page.locator('[data-testid=aggregate] [data-testid=layout]').textContent(),
      new RegExp(`TP=${l.tp} CP=${l.cp} EP=${l.ep} DP=${l.dp} PP=${l.pp}`));

    // The activity strip draws a row per rank, and every rank that ran kernels shows activity.
    const active = await s.page.getByTestId('agg-heat').evaluate((c) => {
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      const rows = [];
      for (let y = 0; y < c.height; y++) {
        let any = false;
        for (let x = 12; x < c.width && !any; x++) any = data[(y * c.width + x) * 4 + 3] > 0;
        rows.push(any);
      }
      return rows;
    });
    assert.equal(active.length, 1024);
    rows.forEach((r, i) => assert.equal(active[i], r.kernels > 0, `rank ${r.rank} activity`));
    // The session's empty views are hidden beside an aggregate alone.
    assert.equal(await s.page.locator('#panel-timeline').isVisible(), false);
    assert.deepEqual(s.errors, []);
  });
});

test('a rank opens on demand, from the table or the strip, with its own kernels', async () => {
  await withScreenshot(s.page, 'aggregate-rank', async () => {
    const rank = 517;
    const t = truth.ranks.find((r) => r.global_rank === rank);
    const t0 = Date.now();
    // The table shows a few dozen of its 1024 rows: its filter finds the rank.
    await s.page.getByTestId('agg-rank-table-filter').fill(String(rank));
    await s.page.locator(`[data-testid=agg-rank-row][data-rank="${rank}"] [data-testid=agg-open-rank]`).click();
    await s.page.getByTestId('agg-rank-table-filter').fill('');
    const detail = s.page.locator(`[data-testid=agg-rank][data-rank="${rank}"][data-kernels]`);
    await detail.waitFor({ timeout: 60_000 });
    console.log(`huge-1024: rank ${rank}'s detail shown ${Date.now() - t0} ms after the click (${await detail.getByTestId('agg-rank-status').textContent()})`);
    assert.equal(Number(await detail.getAttribute('data-kernels')), t.kernels);
    const kernelRows = await allRows(s.page, 'agg-kernel-table', (trs) => trs.map((tr) => ({
      index: Number(tr.dataset.index), cells: [tr.children[2].textContent, tr.children[5].textContent],
    })), (r) => r.index, detail);
    assert.equal(kernelRows.length, Math.min(t.kernels, 1000));
    assert.match(await detail.getByTestId('timeline-summary').textContent(), new RegExp(`^1 tracks, ${t.kernels} kernels$`));
    // The kernels are the command's, in start order.
    const native = JSON.parse(execFileSync(NATIVE_BIN, ['aggregate', 'show', runAgg, '--rank', String(rank)], { maxBuffer: 1 << 28 }).toString()).kernels;
    native.sort((a, b) => a.start_ns - b.start_ns || a.end_ns - b.end_ns);
    assert.deepEqual(kernelRows.map((r) => r.cells), native.slice(0, 1000).map((k) => [k.name, k.op_count == null ? '' : String(k.op_count)]));
    // A kernel's fields, on a click.
    const i = native.findIndex((k) => k.op_count != null);
    await (await findRow(s.page, 'agg-kernel-table', `[data-index="${i}"]`, detail)).click();
    const fields = detail.getByTestId('agg-kernel-fields');
    await fields.waitFor();
    assert.equal(await fields.locator('[data-field-name="Global Rank"]').textContent(), String(rank));
    assert.equal(await fields.locator('[data-field-name="Op Count (Hex)"]').textContent(), native[i].op_count.toString(16));
    assert.equal(await fields.locator('[data-field-name="Communicator ID"]').textContent(), native[i].comm_id);

    // The strip: a click opens the rank under the mouse, the one its hover names (a pixel row
    // may hold more than one rank: 1024 ranks in 600 pixels).
    const heat = s.page.getByTestId('agg-heat');
    await heat.scrollIntoViewIfNeeded();
    const box = await heat.boundingBox();
    const at = { x: box.x + box.width / 2, y: box.y + (900.5 / 1024) * box.height };
    await s.page.mouse.move(at.x, at.y);
    const named = Number((await heat.getAttribute('title')).match(/^rank (\d+): click to open$/)[1]);
    assert.ok(Math.abs(named - 900) <= 3, `the strip names rank ${named} at rank 900's height`);
    await s.page.mouse.click(at.x, at.y);
    const second = s.page.locator(`[data-testid=agg-rank][data-rank="${named}"][data-kernels]`);
    await second.waitFor({ timeout: 60_000 });
    assert.equal(Number(await second.getAttribute('data-kernels')), truth.ranks.find((r) => r.global_rank === named).kernels);
    assert.deepEqual(s.errors, []);
  });
});

/** Hovers (row, col) of the `n`-cell heat map `testId`; returns the hover line's figures. */
async function hoverCell(page, testId, [row, col], n) {
  const canvas = page.getByTestId(testId);
  await canvas.scrollIntoViewIfNeeded();
  // The cells lie inside the border: offsets from the content box.
  const box = await canvas.evaluate((c) => {
    const r = c.getBoundingClientRect();
    return { x: r.left + c.clientLeft, y: r.top + c.clientTop, width: c.clientWidth, height: c.clientHeight };
  });
  await page.mouse.move(box.x + (col + 0.5) * box.width / n, box.y + (row + 0.5) * box.height / n);
  await page.waitForFunction((id) => document.querySelector(`[data-testid="${id}-hover"]`)?.dataset.src != null, testId);
  return page.getByTestId(`${testId}-hover`).evaluate((p) => ({ ...p.dataset }));
}

test('the huge-1024 run aggregate draws its rank-to-rank matrix, a cell\'s bytes the file\'s', async () => {
  await withScreenshot(s.page, 'aggregate-matrix', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').waitFor();
    await dropFiles(s.page, [runAgg]);
    await overviewShown(s.page, 1024, Date.now());
    assert.ok(shown.comm_matrix?.length > 0, 'the merged file carries a matrix');
    const hosts = shown.matrix.hosts;
    assert.equal(hosts.length, 128);
    // At 1 024 ranks a cell per node by default: the largest pair between two nodes.
    const map = s.page.getByTestId('agg-matrix-heatmap');
    await map.waitFor({ timeout: 60_000 });
    assert.equal(await map.evaluate((c) => c.tagName), 'CANVAS');
    assert.equal(Number(await map.getAttribute('data-n')), 128);
    const nodes = new Map();
    for (const e of shown.matrix.nodes) {
      const k = `${e.src}>${e.dst}`;
      nodes.set(k, (nodes.get(k) || 0) + e.bytes);
    }
    const [pair, bytes] = [...nodes].filter(([k]) => k.split('>')[0] !== k.split('>')[1]).sort((a, b) => b[1] - a[1])[0];
    const [a, b] = pair.split('>').map(Number);
    let h = await hoverCell(s.page, 'agg-matrix-heatmap', [a, b], 128);
    assert.equal(`${h.src}>${h.dst}`, pair);
    assert.equal(Number(h.observed), bytes);
    // A cell per rank (node order): a pair of the file's entries (a cell is half a pixel, so
    // one at even positions, which the mouse can land on).
    await s.page.getByTestId('agg-matrix-cells').selectOption('r');
    await s.page.locator('[data-testid=agg-matrix-heatmap][data-n="1024"]').waitFor();
    const order = hosts.flatMap((x) => x.ranks);
    const at = new Map(order.map((r, i) => [r, i]));
    const ranks = new Map();
    for (const e of shown.comm_matrix) {
      const k = `${e.src}>${e.dst}`;
      ranks.set(k, (ranks.get(k) || 0) + e.bytes);
    }
    const [rpair, rbytes] = [...ranks].filter(([k]) => k.split('>').every((r) => at.get(Number(r)) % 2 === 0))
      .sort((x, y) => y[1] - x[1])[0];
    const [rs, rd] = rpair.split('>').map(Number);
    h = await hoverCell(s.page, 'agg-matrix-heatmap', [at.get(rs), at.get(rd)], 1024);
    assert.equal(`${h.src}>${h.dst}`, rpair);
    assert.equal(Number(h.observed), rbytes);
    assert.deepEqual(s.errors, []);
  });
});

test('per-node aggregates dropped together are merged by the page into the same overview', async () => {
  await withScreenshot(s.page, 'aggregate-merge', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').waitFor();
    const t0 = Date.now();
    await dropFiles(s.page, perNode);
    const ms = await overviewShown(s.page, 1024, t0);
    console.log(`huge-1024: 128 per-node aggregates merged in the page and shown in ${ms} ms`);
    const rows = await rankRows(s.page);
    assert.deepEqual(rows.map((r) => [r.rank, r.kernels, r.matched]),
      shown.ranks.map((r) => [r.global_rank, r.kernels, r.matched_ops]));
    const parallelism = (await commRows(s.page)).map((c) => [c.id, c.parallelism]);
    assert.deepEqual(new Map(parallelism), new Map(shown.communicators.map((c) => [c.id, c.parallelism])));
    const node01 = await findRow(s.page, 'file-list', '[data-file="node01.agg"]');
    assert.equal(await node01.locator('[data-testid=kind]').textContent(), 'ncclscope-aggregate');
    assert.deepEqual(s.errors, []);
  });
});

test('a cut or garbled aggregate is an error that names the file', async () => {
  await withScreenshot(s.page, 'aggregate-bad', async () => {
    const bytes = fs.readFileSync(runAgg);
    const cut = path.join(dir, 'cut.agg');
    fs.writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const garbled = path.join(dir, 'garbled.agg');
    const g = Buffer.from(bytes);
    // Bytes in the middle of the overview (the header says where it starts).
    const at = Number(g.readBigUInt64LE(16)) + 100;
    for (let i = at; i < at + 16; i++) g[i] ^= 0x5a;
    fs.writeFileSync(garbled, g);
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').waitFor();
    for (const f of [cut, garbled]) {
      await dropFiles(s.page, [f]);
      await openView(s.page, 'inputs');
      const name = path.basename(f);
      const status = s.page.locator(`[data-testid=file-row][data-file="${name}"] [data-testid=status]`);
      await status.filter({ hasText: /^error/ }).waitFor({ timeout: 30_000 });
      assert.match(await status.textContent(), new RegExp(`^error: ${name}: `));
    }
    assert.equal(await s.page.getByTestId('aggregate').count(), 0);
    assert.deepEqual(s.errors, []);
  });
});
