// Theory versus observed in the page: the form is pre-filled from the trace (parallel sizes
// marked "inferred"), the table equals the native command's `theory` entries for the same
// config, a typed value changes the comparison, and the form survives a reload.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import { startSession, withScreenshot, nativeSummary, openView, NATIVE_BIN, ROOT, demoFiles } from './harness.mjs';


/** The page's byte formatting (decimal units, two decimals). */
function humanBytes(n) {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n; let u = 0;
  while (v >= 1000 && u < units.length - 1) { v /= 1000; u += 1; }
  return u === 0 ? `${n} B` : `${v.toFixed(2)} ${units[u]}`;
}

/** `x` to `digits` significant digits, trailing zeros dropped (the page's `significant`). */
function significant(x, digits) {
  if (x === 0) return '0';
  const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(Math.abs(x))));
  const text = x.toFixed(decimals);
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

/** The page's bandwidth formatting: GB/s in the decimal unit its magnitude calls for. */
function humanRate(gbps) {
  const units = [[1e3, 'TB/s'], [1, 'GB/s'], [1e-3, 'MB/s'], [1e-6, 'KB/s'], [1e-9, 'B/s']];
  const [scale, unit] = units.find(([f]) => Math.abs(gbps) >= f) ?? units.at(-1);
  return `${significant(gbps / scale, 3)} ${unit}`;
}

/** The page's percentages: one decimal under 10 %, none above. */
function percent(fraction) {
  const p = fraction * 100;
  return Math.abs(p) < 10 && p !== 0 ? `${p.toFixed(1)} %` : `${p.toFixed(0)} %`;
}

/** The native command's theory entries for `toml` over the demo run. */
function nativeTheory(toml) {
  nativeSummary(demoFiles()); // builds the binary once
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-theory-'));
  const config = path.join(dir, 'model.toml');
  fs.writeFileSync(config, toml);
  const out = execFileSync(NATIVE_BIN,
    ['analyze', '--config', config, '--json', '-', ...demoFiles()], { cwd: ROOT, maxBuffer: 1 << 28 });
  fs.rmSync(dir, { recursive: true, force: true });
  return JSON.parse(out.toString());
}

async function tableRows(page) {
  await page.getByTestId('theory-table').waitFor({ timeout: 60_000 });
  return page.locator('[data-testid=theory-table] tbody tr').evaluateAll((trs) => trs.map((tr) => ({
    parallelism: tr.dataset.parallelism,
    role: tr.dataset.role,
    theoretical: tr.querySelector('[data-testid=theory-theoretical]').textContent.trim(),
    observed: tr.querySelector('[data-testid=theory-observed]').textContent.trim(),
    ratio: tr.querySelector('[data-testid=theory-ratio]').textContent.trim(),
  })));
}

function assertSameAsNative(rows, native) {
  assert.equal(rows.length, native.theory.length, 'one row per theory entry');
  for (const e of native.theory) {
    const row = rows.find((r) => r.parallelism === e.parallelism && r.role === e.rank_role);
    assert.ok(row, `row ${e.parallelism}/${e.rank_role}`);
    assert.equal(row.theoretical, humanBytes(e.theoretical_bytes), `${e.parallelism} theoretical`);
    assert.equal(row.observed, humanBytes(e.observed_bytes), `${e.parallelism} observed`);
    assert.equal(row.ratio, e.ratio == null ? '—' : e.ratio.toFixed(2), `${e.parallelism} ratio`);
  }
}

let s;
before(async () => { s = await startSession(); });
after(async () => { await s?.close(); });

test('the theory form is pre-filled from the trace and its table equals the command', async () => {
  await withScreenshot(s.page, 'theory-panel', async () => {
    await s.page.goto(s.url);
    await s.page.evaluate(() => localStorage.clear());
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').click();
    await openView(s.page, 'theory');
    await s.page.getByTestId('theory-table').waitFor({ timeout: 60_000 });

    // The trace's layout fills the sizes, marked as inferred.
    const sizes = nativeSummary(demoFiles()).layout.sizes;
    for (const k of ['tp', 'pp', 'dp']) {
      const field = s.page.locator(`[data-field="parallel.${k}"]`);
      assert.equal(await field.inputValue(), String(sizes[k]), `parallel.${k}`);
      assert.match(await field.locator('xpath=..').textContent(), /inferred/);
    }
    const beta = s.page.locator('[data-field="model.bytes_per_element"]');
    assert.equal(await beta.inputValue(), String(nativeSummary(demoFiles()).layout.bytes_per_element));
    assert.match(await beta.locator('xpath=..').textContent(), /inferred/);

    // Compare saves the form; the table shows what the command gives for the same TOML.
    await s.page.getByTestId('theory-apply').click();
    const toml = await s.page.evaluate(() => localStorage.getItem('ncclscope.theory.toml'));
    assert.match(toml, /\[parallel\]/);
    assertSameAsNative(await tableRows(s.page), nativeTheory(toml));

    // A typed value changes the comparison, still equal to the command's.
    const before = await tableRows(s.page);
    await s.page.locator('[data-field="model.layers"]').fill('8');
    await s.page.locator('[data-field="model.layers"]').dispatchEvent('change');
    await s.page.getByTestId('theory-apply').click();
    await s.page.waitForFunction((old) => {
      const td = document.querySelector('[data-testid=theory-theoretical]');
      return td && td.textContent.trim() !== old;
    }, before[0].theoretical);
    const typed = await s.page.evaluate(() => localStorage.getItem('ncclscope.theory.toml'));
    assert.match(typed, /layers = 8/);
    assertSameAsNative(await tableRows(s.page), nativeTheory(typed));

    // Per iteration, as the exports' NVTX ranges count them: theory / observed.
    const native = nativeTheory(typed);
    const perIteration = await s.page.locator('[data-testid=theory-per-iteration]').first().textContent();
    const e0 = native.theory[0];
    assert.equal(perIteration.trim(),
      `${humanBytes(e0.theoretical_bytes_per_iteration)} / ${humanBytes(e0.observed_bytes_per_iteration)}`);

    // Another hardware preset changes the time model's figures.
    const modelTimes = () => s.page.locator('[data-testid=time-table] tbody tr td:nth-child(5)').allTextContents();
    const beforeHw = await modelTimes();
    await s.page.locator('[data-field="ui.hardware"]').selectOption('b200');
    await s.page.getByTestId('theory-apply').click();
    await s.page.waitForFunction(() => /B200/.test(document.querySelector('[data-testid=time-hardware]')?.textContent ?? ''));
    assert.notDeepEqual(await modelTimes(), beforeHw);

    // The histogram marks the bucket of b·s·h·β; the time table has rows.
    assert.ok(await s.page.locator('[data-testid=message-sizes] [data-marked=true]').count() <= 1);
    assert.ok(await s.page.locator('[data-testid=time-table] tbody tr').count() > 0);
    assert.deepEqual(s.errors, []);
  });
});

test('the form survives a reload', async () => {
  await withScreenshot(s.page, 'theory-reload', async () => {
    await s.page.reload();
    await s.page.getByTestId('load-demo').click();
    await openView(s.page, 'theory');
    await s.page.getByTestId('theory-table').waitFor({ timeout: 60_000 });
    assert.equal(await s.page.locator('[data-field="model.layers"]').inputValue(), '8');
    assert.deepEqual(s.errors, []);
  });
});

test('an impossible value is refused with a message naming the key', async () => {
  await withScreenshot(s.page, 'theory-invalid', async () => {
    await s.page.locator('[data-field="parallel.tp"]').fill('zero');
    await s.page.locator('[data-field="parallel.tp"]').dispatchEvent('change');
    await s.page.getByTestId('theory-apply').click();
    await s.page.getByTestId('theory-error').waitFor();
    assert.match(await s.page.getByTestId('theory-error').textContent(), /tp/);
    // Nothing was saved: the stored form still has a number there.
    const toml = await s.page.evaluate(() => localStorage.getItem('ncclscope.theory.toml'));
    assert.doesNotMatch(toml, /tp = "zero"/);
    assert.deepEqual(s.errors, []);
  });
});

test('the communicators panel shows the enrichment the command computes', async () => {
  await withScreenshot(s.page, 'comm-enrichment', async () => {
    await s.page.goto(s.url);
    await s.page.getByTestId('load-demo').click();
    await openView(s.page, 'communicators');
    await s.page.getByTestId('comm-table').waitFor({ timeout: 60_000 });
    const native = nativeSummary(demoFiles());
    let checked = 0;
    for (const c of native.communicators) {
      const bw = c.bandwidth?.median_bus_bw_gbps;
      if (bw == null) continue;
      const row = s.page.locator(`[data-testid=comm-row][data-comm="${c.id}"]`);
      const cell = row.locator('[data-testid=bus-bw]');
      if ((await cell.getAttribute('data-gbps')) === null) {
        // Only scalars: no bandwidth figure, and the reason on hover (issue 30).
        assert.equal((await cell.textContent()).trim(), '—', c.id);
        assert.match(await cell.getAttribute('title'), /scalars/, c.id);
        continue;
      }
      // The command's figure, in the unit its magnitude calls for (3 significant digits).
      // (The page's median may differ from the command's in the last bit: summed in another order.)
      const shownGbps = Number(await cell.getAttribute('data-gbps'));
      assert.ok(Math.abs(shownGbps - bw) <= 1e-12 * bw, `${c.id}: ${shownGbps} GB/s, the command ${bw}`);
      assert.equal((await cell.textContent()).trim(), humanRate(bw), c.id);
      const eff = c.bandwidth.median_bus_efficiency;
      if (eff != null) {
        assert.equal((await row.locator('[data-testid=bus-efficiency]').textContent()).trim(), percent(eff));
      }
      if (c.arrival_skew) {
        assert.match(await row.locator('[data-testid=skew]').textContent(), new RegExp(`^${c.arrival_skew.mean_us.toFixed(1)} µs`));
      }
      checked += 1;
    }
    assert.ok(checked >= 4, `${checked} communicators with a bandwidth`);
    assert.deepEqual(s.errors, []);
  });
});
