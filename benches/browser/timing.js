// Timing helpers of the browser benchmark pages (bench.js, jit.js, layers.js).

/** The median of `a` (the mean of the middle two for an even count). */
export const median = (a) => {
  const s = [...a].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * The time per call of `fn` (ms) in each of `runs` rounds, each round timing
 * `inner` calls back to back (browsers coarsen performance.now()) and ending
 * with `sync` (a readback), after `warmup` calls.
 */
export async function samples(fn, { runs, warmup, sync = (r) => r, inner = 1 }) {
  for (let i = 0; i < warmup; i++) await sync(fn());
  const ts = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < inner; i++) await sync(fn());
    ts.push((performance.now() - t0) / inner);
  }
  return ts;
}

/** The median of `samples(fn, options)`. */
export const time = async (fn, options) => median(await samples(fn, options));
