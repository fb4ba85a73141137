// Not part of the test suite: writes the README's screenshots. Loads the demo run on the built
// page (dist/) in Chromium and saves PNGs of the main views, each cropped to its element, into
// docs/screenshots/: the timeline with a picked kernel and its details, the rank and
// communicator tables, the bandwidth panel, the theory comparison, and the timeline in the
// dark theme.
//
//   trunk build --release --cargo-profile wasm-release && node tests/browser/bench/screenshots.mjs
import fs from 'node:fs';
import path from 'node:path';
import { startSession, pickCollective, ROOT } from '../harness.mjs';

const OUT = path.join(ROOT, 'docs/screenshots');
fs.mkdirSync(OUT, { recursive: true });

const s = await startSession();
const { page } = s;
try {
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(s.url);
  await page.getByTestId('empty-state').waitFor();
  const shots = [];

  /**
   * Saves the union of the elements' boxes (page coordinates), a little padded, at most
   * `maxHeight` tall (the README shows them small; it keeps each file under ~300 KB).
   */
  async function shot(name, maxHeight, ...selectors) {
    const boxes = [];
    for (const sel of selectors) {
      const el = page.locator(sel).first();
      await el.scrollIntoViewIfNeeded();
      boxes.push(await el.evaluate((e) => {
        const r = e.getBoundingClientRect();
        return { x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height };
      }));
    }
    const x = Math.max(0, Math.min(...boxes.map((b) => b.x)) - 8);
    const y = Math.max(0, Math.min(...boxes.map((b) => b.y)) - 8);
    const w = Math.max(...boxes.map((b) => b.x + b.w)) + 8 - x;
    const h = Math.max(...boxes.map((b) => b.y + b.h)) + 8 - y;
    const file = path.join(OUT, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true, clip: { x, y, width: w, height: Math.min(h, maxHeight) } });
    shots.push(`${name}.png: ${(fs.statSync(file).size / 1024).toFixed(0)} KB`);
  }

  await shot('empty-state', 700, 'header', '[data-testid=empty-state]');

  // The sticky panel bar would cover the top of every crop below the fold.
  await page.addStyleTag({ content: '.panel-nav { position: static !important; }' });
  await page.getByTestId('load-demo').click();
  await page.getByTestId('ops-table').waitFor({ timeout: 120_000 });
  await page.getByTestId('rank-row').first().waitFor();
  await pickCollective(page, 1);
  await shot('timeline-details', 900, '#panel-timeline');

  // Tables sorted by a numeric column.
  await page.locator('[data-testid=rank-table] th[data-col="5"]').click();
  await page.locator('[data-testid=rank-table] th[data-col="5"]').click();
  await shot('tables', 760, 'section.ranks', 'section.communicators');

  await shot('panel-bandwidth', 1000, '.panel:has([data-testid=bw-scatter])');
  if (await page.getByTestId('theory-panel').count()) {
    await page.getByTestId('theory-table').waitFor({ timeout: 60_000 }).catch(() => {});
    await shot('theory', 1000, '[data-testid=theory-panel]');
  }

  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction(() => document.querySelector('[data-testid=timeline]').getContext('2d').getImageData(2, 24, 1, 1).data[0] < 80);
  await shot('dark-timeline', 900, '#panel-timeline');
  await shot('dark-panel-operations', 1000, '.panel:has([data-testid=ops-count-chart])');
  console.log(shots.join('\n'));
} finally {
  await s.close();
}
