// PyTorch profiler traces in the page (issue 33): the process group each communicator's trace
// names (`default_pg`, `undefined`, `mesh_tp`, Megatron's names) is shown beside the inferred
// parallelism in the communicators table and in the overview, with whether the two agree, each
// checked against the native command's summary of the same real trace.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSession, withScreenshot, dropFiles, nativeSummary, allRows, openView, FIXTURES } from './harness.mjs';

const KINETO = path.join(FIXTURES, 'kineto');
const TRACES = ['HTA-nccl_parser_config_rank0of2_full-args.json.gz', 'TraceLens-b200_eager_rank0of8_nccl2.27.5.json.gz'];

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

/** The verdict word the page shows for a communicator of the command's summary. */
function verdictOf(pg) {
  if (pg.agrees === true) return 'agrees';
  if (pg.agrees === false) return 'disagrees';
  if (pg.labels_the_communicator) return 'labels';
  if (pg.assumed_world && pg.description == null) return 'world assumed';
  return 'no single parallelism';
}

for (const trace of TRACES) {
  test(`${trace}: each communicator's process group and its agreement, as the command says`, async (t) => {
    const file = path.join(KINETO, trace);
    if (!fs.existsSync(file)) return t.skip(`real fixtures absent at ${FIXTURES}`);
    await withScreenshot(s.page, `kineto-groups-${trace}`, async () => {
      const native = nativeSummary([file]);
      const named = native.communicators.filter((c) => c.process_group);
      assert.ok(named.length > 0, 'the command names process groups');
      await s.page.goto(s.url);
      await dropFiles(s.page, [file]);
      await openView(s.page, 'communicators');
      await s.page.getByTestId('comm-row').first().waitFor({ timeout: 60_000 });
      const rows = await allRows(s.page, 'comm-table', (trs) => trs.map((tr) => {
        const g = tr.querySelector('[data-testid=process-group]');
        return {
          id: tr.dataset.comm,
          parallelism: tr.querySelector('[data-testid=parallelism]').textContent,
          description: g.dataset.description ?? null,
          verdict: g.dataset.verdict ?? null,
          text: g.textContent.trim(),
        };
      }), (r) => r.id);
      for (const c of named) {
        const row = rows.find((r) => r.id === c.id);
        assert.ok(row, `communicator ${c.id} shown`);
        const pg = c.process_group;
        assert.equal(row.description, pg.description ?? '', `${c.id}: the description`);
        assert.equal(row.verdict, verdictOf(pg), `${c.id}: the verdict`);
        assert.equal(row.parallelism, c.parallelism, `${c.id}: the label beside it`);
        // The cell says it in words: the description first, then what it means.
        if (pg.description) assert.ok(row.text.startsWith(pg.description), row.text);
        if (pg.description === 'default_pg') assert.match(row.text, /world group, names no single parallelism/);
      }
      // The overview lists the same descriptions beside the parallelisms they sit with.
      await openView(s.page, 'overview');
      const overview = await s.page.getByTestId('overview-group').evaluateAll((lis) => lis.map((l) => l.dataset.description));
      const described = new Set(named.map((c) => c.process_group.description).filter(Boolean));
      assert.deepEqual(new Set(overview), described);
      assert.deepEqual(s.errors, []);
    });
  });
}

// The eight DLRM ranks' traces: their ProfilerStep and record_function ranges give the Steps
// view its steps (from the ranges, as the command says), each rank's own.
test('DLRM traces: the Steps view reads their ProfilerStep and stage ranges, as the command does', async (t) => {
  const files = fs.existsSync(KINETO)
    ? fs.readdirSync(KINETO).filter((f) => f.includes('dlrm')).map((f) => path.join(KINETO, f))
    : [];
  if (files.length === 0) return t.skip(`real fixtures absent at ${FIXTURES}`);
  await withScreenshot(s.page, 'kineto-steps-dlrm', async () => {
    const native = nativeSummary(files);
    assert.equal(native.steps.source, 'nvtx');
    await s.page.goto(s.url);
    await dropFiles(s.page, files);
    await openView(s.page, 'steps');
    await s.page.getByTestId('steps-theta-shown').waitFor({ timeout: 120_000 });
    assert.match(await s.page.getByTestId('steps-theta-shown').textContent(), /^Steps from the NVTX or record_function ranges/);
    const steps = await s.page.getByTestId('steps-step').evaluateAll((bs) => bs.map((b) => Number(b.dataset.step)));
    assert.deepEqual(steps, native.steps.per_step.map((r) => r.step));
    const ranks = await s.page.getByTestId('steps-per-step').locator('tbody tr').first().locator('td').nth(1).textContent();
    assert.equal(Number(ranks), native.steps.per_step[0].ranks);
    assert.equal(Number(ranks), 8);
    assert.deepEqual(s.errors, []);
  });
});
