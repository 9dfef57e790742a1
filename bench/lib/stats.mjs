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
