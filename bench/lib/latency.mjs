// Latency percentiles from raw samples (float milliseconds), nearest rank.

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export function summarise(samples) {
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  const round = (v) => (v === null ? null : Math.round(v * 1000) / 1000);
  return {
    count: sorted.length,
    mean_ms: sorted.length ? round(sum / sorted.length) : null,
    p50_ms: round(percentile(sorted, 50)),
    p90_ms: round(percentile(sorted, 90)),
    p99_ms: round(percentile(sorted, 99)),
    p999_ms: round(percentile(sorted, 99.9)),
    max_ms: round(sorted.length ? sorted[sorted.length - 1] : null),
  };
}
