// Not part of the test suite: writes the README's screenshots. Loads the demo run on the built
// page (dist/) in Chromium at 1366×768 and saves each view as the window shows it into
// docs/screenshots/: the empty page, the overview, the timeline with a picked kernel in the
// details drawer, the communicators, the bandwidth and theory views, and the overview and
// timeline in the dark theme. (The browser test tests/browser/views.test.mjs keeps every view
// at 1366×768 and 1920×1080 in both themes in tests/browser/artifacts/views/.)
//
//   scripts/build-site && node tests/browser/bench/screenshots.mjs
import fs from 'node:fs';
import path from 'node:path';
import { startSession, pickCollective, openView, ROOT } from '../harness.mjs';

const OUT = path.join(ROOT, 'docs/screenshots');
fs.mkdirSync(OUT, { recursive: true });

const s = await startSession();
const { page } = s;
try {
  await page.setViewportSize({ width: 1366, height: 768 });
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(s.url);
  await page.getByTestId('empty-state').waitFor();
  const shots = [];

  /** Saves the window as it is. */
  async function shot(name) {
    await page.waitForTimeout(300);
    const file = path.join(OUT, `${name}.png`);
    await page.screenshot({ path: file });
    shots.push(`${name}.png: ${(fs.statSync(file).size / 1024).toFixed(0)} KB`);
  }

  await shot('empty-state');
  await page.getByTestId('load-demo').click();
  await page.getByTestId('overview-parallelism').waitFor({ timeout: 120_000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.window);
  await shot('overview');

  await openView(page, 'timeline');
  await pickCollective(page, 1);
  await shot('timeline-details');
  await page.getByTestId('drawer-close').click().catch(() => {});

  await openView(page, 'communicators');
  await shot('communicators');
  await openView(page, 'bandwidth');
  await page.getByTestId('bw-scatter').waitFor();
  await shot('bandwidth');
  await openView(page, 'theory');
  await page.getByTestId('theory-table').waitFor({ timeout: 60_000 }).catch(() => {});
  await shot('theory');

  await page.emulateMedia({ colorScheme: 'dark' });
  await openView(page, 'overview');
  await shot('dark-overview');
  await openView(page, 'timeline');
  await shot('dark-timeline');
  console.log(shots.join('\n'));
} finally {
  await s.close();
}
