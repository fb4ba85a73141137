// Shared by the page benchmarks: a summary of frame intervals (ms) between animation frames.
export const frameStats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
  return {
    frames: s.length,
    max_ms: +(s[s.length - 1] ?? 0).toFixed(1),
    p95_ms: +at(0.95).toFixed(1),
    mean_ms: +(s.reduce((a, x) => a + x, 0) / Math.max(1, s.length)).toFixed(1),
    over_20ms: s.filter((x) => x > 20).length,
  };
};

/** Starts recording the intervals between animation frames in the page (`stopFrames` ends it). */
export const startFrames = (page) => page.evaluate(() => {
  window.__frames = [];
  let last = null;
  const tick = (t) => {
    if (last !== null) window.__frames.push(t - last);
    last = t;
    if (window.__recording) requestAnimationFrame(tick);
  };
  window.__recording = true;
  requestAnimationFrame(tick);
});

/** Stops recording; the frame intervals so far. */
export const stopFrames = (page) => page.evaluate(() => { window.__recording = false; return window.__frames; });
