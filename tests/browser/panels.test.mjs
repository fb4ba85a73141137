// The analysis panels over the demo run, each checked against an independent source: the
// alignment report and the operation charts against the native command's JSON, the bandwidth
// scatter and efficiency distribution against its per-communicator bandwidth figures, the
// topology diagram against the demo log's own topology dumps, the warnings against a log of
// WARN lines dropped after the demo. Tables sort and save as CSV; plots save as SVG.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSession, withScreenshot, nativeSummary, dropFiles, openView, openViewOf, DEMO, demoFiles, download } from './harness.mjs';


const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/** Rows of a panel table as arrays of cell texts. */
const tableRows = async (page, id) => (await openViewOf(page, id), page.locator(`[data-testid=${id}] tbody tr`))
  .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));

/** A chart's bars: label and value. */
const bars = async (page, id) => (await openViewOf(page, id), page.locator(`[data-testid=${id}] g[data-value]`))
  .evaluateAll((gs) => gs.map((g) => ({ label: g.dataset.label, value: Number(g.dataset.value) })));

/**
 * The first topology dump of each host in a log, read independently of the page's parser:
 * nodes, and links as unordered pairs with their class and bandwidth (a child line `+ NVL[150.0]
 * - GPU/0-2a000` links to the nearest less indented node above it).
 */
function topologyDumps(log) {
  const hosts = new Map();
  let cur = null;
  for (const line of log.split('\n')) {
    const m = line.match(/ (\S+?):(\d+):\d+ \[\d+\] NCCL INFO (.*)$/);
    if (!m) continue;
    const [, host, pid, body] = m;
    if (body.startsWith('=== System')) {
      cur = hosts.has(host) ? null : { host, pid, nodes: new Set(), links: new Map(), stack: [] };
      if (cur) hosts.set(host, cur);
      continue;
    }
    if (!cur || cur.pid !== pid) continue;
    if (body.startsWith('=====')) { cur = null; continue; }
    const n = body.match(/^(\s*)(?:\+ (\w+)\[([\d.]+)\] - )?([A-Z]+)\/(\S+)/);
    if (!n) continue;
    const [, indent, cls, bw, kind, id] = n;
    const node = `${kind}/${id}`;
    cur.nodes.add(node);
    if (!cls) { cur.stack = [{ indent: -1, node }]; continue; }
    while (cur.stack.length > 1 && cur.stack[cur.stack.length - 1].indent >= indent.length) cur.stack.pop();
    const parent = cur.stack[cur.stack.length - 1].node;
    const key = `${[parent, node].sort().join('|')}|${cls}`;
    if (!cur.links.has(key)) cur.links.set(key, { cls, bw: Number(bw) });
    cur.stack.push({ indent: indent.length, node });
  }
  return hosts;
}

let s;
let native;
before(async () => {
  native = nativeSummary(demoFiles());
  s = await startSession();
  await s.page.goto(s.url);
  await s.page.getByTestId('load-demo').click();
  await s.page.getByTestId('view-alignment').waitFor({ timeout: 120_000 });
  await openView(s.page, 'alignment');
  await s.page.getByTestId('alignment-table').waitFor({ timeout: 120_000 });
});
after(async () => { await s?.close(); });

test('alignment report per rank agrees with the native command', async () => {
  await withScreenshot(s.page, 'panels-alignment', async () => {
    const rows = await tableRows(s.page, 'alignment-table');
    assert.equal(rows.length, native.ranks.length, 'one row per aligned rank');
    for (const r of native.ranks) {
      const row = rows.find((x) => x[0] === String(r.global_rank));
      assert.ok(row, `rank ${r.global_rank}`);
      assert.equal(row[1], `${r.host}:${r.pid}`);
      assert.equal(Number(row[4]), r.matched_ops, `rank ${r.global_rank} matched`);
      const conf = Number(row[12]);
      assert.ok(conf > 0 && conf <= 1, `confidence ${row[12]}`);
      assert.ok(['yes', 'no'].includes(row[11]));
    }
    assert.equal(sum(rows.map((r) => Number(r[4]))), native.alignment.matched, 'matched in all');
    assert.equal(sum(rows.map((r) => Number(r[3]))), native.alignment.log_ops, 'log lines in all');
    assert.equal(sum(rows.map((r) => Number(r[2]))), native.alignment.kernels, 'NCCL kernels in all');
    assert.equal(sum(rows.map((r) => Number(r[10]))), native.alignment.unmatched_kernels, 'orphan kernels');
  });
});

test('operation counts and volume per type, total and per rank, equal the native command', async () => {
  await withScreenshot(s.page, 'panels-ops', async () => {
    const totals = {};
    const bytes = {};
    for (const r of native.ranks) {
      for (const [op, n] of Object.entries(r.ops_by_type)) totals[op] = (totals[op] ?? 0) + n;
      for (const [op, b] of Object.entries(r.bytes_by_type)) bytes[op] = (bytes[op] ?? 0) + b;
    }
    const expectedOps = Object.keys(totals).filter((op) => totals[op] > 0).sort();
    const counts = await bars(s.page, 'ops-count-chart');
    assert.deepEqual(counts.map((b) => b.label).sort(), expectedOps, 'one bar per logged type');
    for (const b of counts) assert.equal(b.value, totals[b.label], `${b.label} count`);
    for (const b of await bars(s.page, 'ops-bytes-chart')) assert.equal(b.value, bytes[b.label], `${b.label} bytes`);
    const perRank = await bars(s.page, 'rank-count-chart');
    assert.equal(perRank.length, native.ranks.length);
    for (const r of native.ranks) {
      assert.equal(perRank.find((b) => b.label === String(r.global_rank)).value, sum(Object.values(r.ops_by_type)));
    }
    const perRankBytes = await bars(s.page, 'rank-bytes-chart');
    for (const r of native.ranks) {
      assert.equal(perRankBytes.find((b) => b.label === String(r.global_rank)).value, sum(Object.values(r.bytes_by_type)));
    }
  });
});

test('bandwidth scatter and efficiency distribution hold every enriched kernel', async () => {
  await withScreenshot(s.page, 'panels-bandwidth', async () => {
    const comms = native.communicators.filter((c) => c.bandwidth);
    const kernels = sum(comms.map((c) => c.bandwidth.kernels));
    assert.ok(kernels > 0);
    await openView(s.page, 'bandwidth');
    const points = await s.page.locator('[data-testid=bw-scatter] [data-testid=scatter-point]')
      .evaluateAll((cs) => cs.map((c) => ({ x: Number(c.dataset.x), y: Number(c.dataset.y), w: Number(c.dataset.weight) })));
    assert.equal(sum(points.map((p) => p.w)), kernels, 'the points stand for every kernel with a bandwidth');
    assert.ok(points.length > 1 && points.length <= kernels, `${points.length} points`);
    // Every communicator's median bus bandwidth lies within the points' range.
    const ys = points.map((p) => p.y);
    for (const c of comms.filter((c) => c.bandwidth.median_bus_bw_gbps)) {
      const m = c.bandwidth.median_bus_bw_gbps;
      assert.ok(m >= Math.min(...ys) * 0.8 && m <= Math.max(...ys) * 1.25, `${c.id} median ${m}`);
    }
    const limits = await s.page.locator('[data-testid=bw-scatter] [data-testid=limit-line]')
      .evaluateAll((ls) => ls.map((l) => Number(l.dataset.gbps)));
    const expected = [...new Set(comms.map((c) => c.bandwidth.bottleneck_gbps).filter((g) => g != null))].sort((a, b) => a - b);
    assert.deepEqual([...new Set(limits)].sort((a, b) => a - b), expected, 'one line per bottleneck bandwidth');
    const eff = await bars(s.page, 'efficiency-chart');
    assert.equal(eff.length, 11);
    const withLimit = sum(comms.filter((c) => c.bandwidth.bottleneck_gbps != null).map((c) => c.bandwidth.kernels));
    assert.equal(sum(eff.map((b) => b.value)), withLimit, 'efficiency of every kernel whose link is known');
  });
});

test('topology diagram per host matches the log\'s topology dumps', async () => {
  await withScreenshot(s.page, 'panels-topology', async () => {
    const dumps = topologyDumps(fs.readFileSync(path.join(DEMO, 'nccl_debug_combined.log'), 'utf8'));
    await openView(s.page, 'topology');
    const hosts = await s.page.locator('.topology-host').evaluateAll((hs) => hs.map((h) => h.dataset.host));
    assert.deepEqual(hosts.sort(), [...dumps.keys()].sort());
    for (const [host, d] of dumps) {
      const svg = s.page.locator(`.topology-host[data-host="${host}"] svg`);
      assert.equal(await svg.locator('[data-testid=topo-node]').count(), d.nodes.size, `${host} nodes`);
      const links = await svg.locator('[data-testid=topo-link]')
        .evaluateAll((ls) => ls.map((l) => `${l.dataset.class} ${Number(l.dataset.gbps)}`));
      const want = [...d.links.values()].map((l) => `${l.cls} ${l.bw}`);
      assert.deepEqual(links.sort(), want.sort(), `${host} links`);
    }
  });
});

test('tables sort on a header click and save as CSV; plots save as SVG', async () => {
  await withScreenshot(s.page, 'panels-export', async () => {
    const page = s.page;
    await openView(page, 'alignment');
    const matched = async () => (await tableRows(page, 'alignment-table')).map((r) => Number(r[4]));
    await page.locator('[data-testid=alignment-table] th[data-col="4"]').click();
    const asc = await matched();
    assert.deepEqual(asc, [...asc].sort((a, b) => a - b), 'ascending');
    await page.locator('[data-testid=alignment-table] th[data-col="4"]').click();
    const desc = await matched();
    assert.deepEqual(desc, [...asc].sort((a, b) => b - a), 'descending');

    const csv = await download(page, 'alignment-table-csv');
    assert.equal(csv.name, 'ncclscope-alignment-table.csv');
    const lines = csv.bytes.toString('utf8').trim().split('\r\n');
    assert.equal(lines.length, native.ranks.length + 1, 'header and one line per rank');
    assert.match(lines[0], /^rank,process,NCCL kernels,log lines,matched,/);
    const r0 = native.ranks[0];
    const line = lines.find((l) => l.startsWith(`${r0.global_rank},`));
    assert.equal(Number(line.split(',')[4]), r0.matched_ops);

    await openView(page, 'bandwidth');
    const text = (await download(page, 'bw-scatter-svg')).bytes.toString('utf8');
    assert.match(text, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    const circles = (text.match(/<circle /g) ?? []).length;
    assert.equal(circles, await page.locator('[data-testid=bw-scatter] circle').count());
  });
});

test('the run\'s NCCL WARN lines are listed with file and line, as text', async () => {
  await withScreenshot(s.page, 'panels-warnings', async () => {
    const page = s.page;
    await openView(page, 'warnings');
    assert.match(await page.getByTestId('warning-count').textContent(), /no NCCL WARN/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-warn-'));
    const log = path.join(dir, 'warns.log');
    fs.writeFileSync(log, [
      'node09:4242:4243 [0] NCCL INFO NCCL version 2.21.5+cuda12.4',
      'node09:4242:4243 [0] init.cc:1197 NCCL WARN Cuda failure \'out of memory\'',
      'node09:4242:4243 [0] NCCL INFO something else',
      'node09:4242:4243 [0] transport/net.cc:88 NCCL WARN <img src=x onerror=alert(1)> NET/IB : timeout',
      '',
    ].join('\n'));
    await dropFiles(page, [log]);
    await page.getByTestId('warning-table').waitFor({ timeout: 60_000 });
    assert.equal((await page.getByTestId('warning-count').textContent()).trim(), '2 NCCL WARN lines');
    const rows = await tableRows(page, 'warning-table');
    // No timestamps on these lines: the time column is empty (notes.test.mjs has timed ones).
    assert.deepEqual(rows, [
      ['warns.log', '2', '', 'node09:4242', 'Cuda failure \'out of memory\''],
      ['warns.log', '4', '', 'node09:4242', '<img src=x onerror=alert(1)> NET/IB : timeout'],
    ]);
    assert.equal(await page.locator('.panels img').count(), 0, 'text, never markup');
    fs.rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(s.errors, []);
  });
});
