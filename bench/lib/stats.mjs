// Small helpers for figures: medians, min–max spreads, rounding.

export function median(values) {
  const v = values.filter((x) => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

export function spread(values) {
  const v = values.filter((x) => typeof x === "number" && Number.isFinite(x));
  if (v.length === 0) return null;
  return { min: Math.min(...v), max: Math.max(...v) };
}

export function round(value, digits = 3) {
  if (value === null || value === undefined || !Number.isFinite(value)) return null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * A request's own cost from closed-loop throughput, round by round: 1e6 /
 * its requests per second less its baseline's in the same round, in µs (at
 * saturation workerd's thread is the bottleneck, so that is its time per
 * request).
 */
export function ownUsPerRound(rps, baseRps) {
  return rps.map((v, i) => 1e6 / v - 1e6 / baseRps[i]);
}

/** A ratio summarised over rounds: its median and min–max. */
export function ratioSummary(perRound) {
  const s = spread(perRound);
  return { median: round(median(perRound)), min: round(s?.min ?? null), max: round(s?.max ?? null), per_round: perRound.map((r) => round(r)) };
}

/** A seeded PRNG (mulberry32): the same resamples every run, so an interval does not move by chance alone. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The median of `values` (one per round) and a percentile-bootstrap 95 %
 * interval for it: the rounds resampled with replacement `resamples` times,
 * the 2.5th and 97.5th percentiles of the resampled medians.
 */
export function medianWithInterval(values, resamples = 10_000, seed = 39) {
  const v = values.filter((x) => typeof x === "number" && Number.isFinite(x));
  if (v.length === 0) return { median: null, low: null, high: null, n: 0 };
  const random = prng(seed);
  const medians = new Float64Array(resamples);
  const sample = new Array(v.length);
  for (let r = 0; r < resamples; r++) {
    for (let i = 0; i < v.length; i++) sample[i] = v[Math.floor(random() * v.length)];
    medians[r] = median(sample);
  }
  medians.sort();
  return { median: median(v), low: medians[Math.floor(0.025 * resamples)], high: medians[Math.ceil(0.975 * resamples) - 1], n: v.length };
}
