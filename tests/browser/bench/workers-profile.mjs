// Benchmark tool, not part of the test suite: where the page's workers spend one load. Loads
// files on the built page as load.mjs does (once the loading worker has warmed up), with the V8
// sampling profiler running in every worker (CDP, one session per worker target), and prints
// each worker's idle time and its functions by self time; `--parents=NAME` also prints who
// calls NAME. The profiles are kept as DIR/workerN.cpuprofile (open in Chromium's DevTools).
//
//   node tests/browser/bench/workers-profile.mjs [--dist=DIR] [--out=DIR] [--top=40]
//                                                [--parents=NAME] PATH...
//       --dist: the built page (default dist/). For function names, the worker's wasm needs its
//           name section, which the release build drops; build it with names and put it in a copy
//           of dist/ (the JavaScript glue is the same):
//             CARGO_PROFILE_WASM_RELEASE_DEBUG=line-tables-only trunk build --release \
//               --cargo-profile wasm-release --dist target/dist-prof
//             wasm-bindgen --target no-modules --keep-debug --out-dir target/wb \
//               target/wasm32-unknown-unknown/wasm-release/ncclscope-worker.wasm
//             wasm-opt -Os -g -o target/dist-prof/ncclscope-worker_bg.wasm \
//               target/wb/ncclscope-worker_bg.wasm
//       --out: where the profiles go (default target/).
import fs from 'node:fs';
import path from 'node:path';
import { startSession, ROOT } from '../harness.mjs';
import { inputs } from './frames.mjs';

const args = process.argv.slice(2);
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.split('=').slice(1).join('=');
const dist = option('dist') ? path.resolve(option('dist')) : path.join(ROOT, 'dist');
const out = option('out') ? path.resolve(option('out')) : path.join(ROOT, 'target');
const top = Number(option('top') ?? 40);
const files = inputs(args.filter((a) => !a.startsWith('--')));
if (!files.length) {
  console.error('usage: node tests/browser/bench/workers-profile.mjs [options] PATH...');
  process.exit(2);
}

/// Self time (µs) per function name of a V8 CPU profile.
function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const times = new Map();
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id).callFrame;
    const name = frame.functionName || `(anonymous ${frame.url.split('/').pop()})`;
    times.set(name, (times.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return times;
}

/// Total time (µs) of every node named `name`, per chain of its three nearest callers.
function callers(profile, name) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const own = new Map();
  profile.samples.forEach((id, i) => own.set(id, (own.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = (id) => (own.get(id) ?? 0) + (byId.get(id).children ?? []).reduce((t, c) => t + total(c), 0);
  const chains = new Map();
  for (const n of profile.nodes.filter((n) => n.callFrame.functionName === name)) {
    const chain = [];
    for (let p = parent.get(n.id); p && chain.length < 3; p = parent.get(p)) {
      chain.push(byId.get(p).callFrame.functionName.replace(/::h[0-9a-f]{16}$/, ''));
    }
    const key = chain.join(' <- ');
    chains.set(key, (chains.get(key) ?? 0) + total(n.id));
  }
  return [...chains].sort((a, b) => b[1] - a[1]);
}

const ms = (us) => String(Math.round(us / 1000)).padStart(7);
const s = await startSession({ dist });
try {
  await s.page.goto(s.url);
  await s.page.locator('.page[data-worker-warm-ms]').waitFor({ state: 'attached', timeout: 60000 });
  // The workers are other targets than the page: reached through the browser's session, one
  // (non-flat) session each, their commands and answers wrapped in Target messages.
  const browser = await s.page.context().browser().newBrowserCDPSession();
  let next = 1;
  const waiting = new Map();
  browser.on('Target.receivedMessageFromTarget', ({ message }) => {
    const m = JSON.parse(message);
    waiting.get(m.id)?.(m);
    waiting.delete(m.id);
  });
  const send = (sessionId, method, params = {}) => new Promise((resolve) => {
    const id = next++;
    waiting.set(id, resolve);
    browser.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params }) });
  });
  const { targetInfos } = await browser.send('Target.getTargets');
  const sessions = [];
  for (const t of targetInfos.filter((t) => t.type === 'worker')) {
    const { sessionId } = await browser.send('Target.attachToTarget', { targetId: t.targetId, flatten: false });
    await send(sessionId, 'Profiler.enable');
    await send(sessionId, 'Profiler.setSamplingInterval', { interval: 200 });
    await send(sessionId, 'Profiler.start');
    sessions.push(sessionId);
  }
  const started = Date.now();
  await s.page.getByTestId('file-input').setInputFiles(files);
  await s.page.waitForFunction(
    () => /[1-9]\d* kernels/.test(document.querySelector('[data-testid=timeline-summary]')?.textContent ?? ''),
    null, { timeout: 600000, polling: 100 });
  console.log(`${files.length} files: drop to timeline ${((Date.now() - started) / 1000).toFixed(2)} s ` +
    `(with the profilers running), ${sessions.length} workers`);
  for (const [k, sessionId] of sessions.entries()) {
    const { result } = await send(sessionId, 'Profiler.stop');
    fs.writeFileSync(path.join(out, `worker${k}.cpuprofile`), JSON.stringify(result.profile));
    const times = [...selfTimes(result.profile)].sort((a, b) => b[1] - a[1]);
    const all = times.reduce((t, [, us]) => t + us, 0);
    console.log(`--- worker ${k}: ${ms(all)} ms profiled`);
    for (const [name, us] of times.slice(0, top)) console.log(ms(us), name.slice(0, 160));
    if (option('parents')) {
      console.log(`    callers of ${option('parents')}:`);
      for (const [chain, us] of callers(result.profile, option('parents')).slice(0, 8)) console.log(ms(us), '  ', chain);
    }
  }
} finally {
  await s.close();
}
