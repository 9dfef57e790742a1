// The latency chart: p50 and p99 of (a), (b) and (c), hand-written SVG. Two
// panels, each with its own scale, because p99 is an order of magnitude above
// p50 on a shared 2-core machine and one axis would flatten the p50 bars.

const COLORS = { a: "#8a8f98", b: "#2f6fdb", c: "#e07b24" };
const LABELS = { a: "(a) bare pass-through", b: "(b) Tollgate, cached key", c: "(c) Tollgate, upload + quota" };

function esc(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmt(v) {
  return v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

function fmtAxis(v) {
  return String(Number(v.toFixed(2)));
}

/** values: {name: {median, min, max}}; the bar is the median, the whisker spans min–max over rounds. */
function panel(x0, y0, w, h, title, values) {
  const max = niceMax(Math.max(...Object.values(values).map((v) => v.max ?? v.median)) * 1.05);
  const names = Object.keys(values);
  const slot = w / names.length;
  const barW = Math.min(56, slot * 0.6);
  const out = [];
  out.push(`<text x="${x0 + w / 2}" y="${y0 - 14}" text-anchor="middle" font-size="14" font-weight="600">${esc(title)}</text>`);
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    const y = y0 + h - (h * i) / 4;
    out.push(`<line x1="${x0}" y1="${y}" x2="${x0 + w}" y2="${y}" stroke="#e3e5e8"/>`);
    out.push(`<text x="${x0 - 6}" y="${y + 4}" text-anchor="end" font-size="11" fill="#555">${esc(fmtAxis(v))}</text>`);
  }
  const yOf = (v) => y0 + h - (v / max) * h;
  names.forEach((name, i) => {
    const { median: v, min, max: hi } = values[name];
    const bh = (v / max) * h;
    const x = x0 + slot * i + (slot - barW) / 2;
    const cx = x + barW / 2;
    out.push(`<rect x="${x.toFixed(1)}" y="${(y0 + h - bh).toFixed(1)}" width="${barW.toFixed(1)}" height="${bh.toFixed(1)}" fill="${COLORS[name]}"><title>${esc(LABELS[name])}: median ${esc(fmt(v))} ms, rounds ${esc(fmt(min ?? v))}–${esc(fmt(hi ?? v))} ms</title></rect>`);
    if (min !== undefined && hi !== undefined && hi > min) {
      out.push(`<line x1="${cx.toFixed(1)}" y1="${yOf(min).toFixed(1)}" x2="${cx.toFixed(1)}" y2="${yOf(hi).toFixed(1)}" stroke="#222" stroke-width="1.5"/>`);
      for (const t of [min, hi]) out.push(`<line x1="${(cx - 6).toFixed(1)}" y1="${yOf(t).toFixed(1)}" x2="${(cx + 6).toFixed(1)}" y2="${yOf(t).toFixed(1)}" stroke="#222" stroke-width="1.5"/>`);
    }
    const labelY = Math.min(y0 + h - bh, hi !== undefined ? yOf(hi) : Infinity) - 5;
    out.push(`<text x="${(cx + (hi !== undefined && hi > v ? 10 : 0)).toFixed(1)}" y="${labelY.toFixed(1)}" text-anchor="${hi !== undefined && hi > v ? "start" : "middle"}" font-size="12">${esc(fmt(v))}</text>`);
    out.push(`<text x="${(x + barW / 2).toFixed(1)}" y="${y0 + h + 16}" text-anchor="middle" font-size="12">(${name})</text>`);
  });
  out.push(`<line x1="${x0}" y1="${y0 + h}" x2="${x0 + w}" y2="${y0 + h}" stroke="#333"/>`);
  return out.join("\n  ");
}

/**
 * runs: {a: [run, …], b: …, c: …} (each run has latency.p50_ms and
 * latency.p99_ms); bars are medians over rounds, whiskers min–max.
 * caption: one line under the title.
 */
export function latencySvg(runs, caption) {
  const W = 720;
  const H = 400;
  const names = ["a", "b", "c"].filter((n) => runs[n]?.length);
  const stat = (n, field) => {
    const v = runs[n].map((r) => r.latency[field]).sort((x, y) => x - y);
    const mid = Math.floor(v.length / 2);
    return { median: v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2, min: v[0], max: v[v.length - 1] };
  };
  const p50 = Object.fromEntries(names.map((n) => [n, stat(n, "p50_ms")]));
  const p99 = Object.fromEntries(names.map((n) => [n, stat(n, "p99_ms")]));
  const legend = names
    .map((n, i) => `<rect x="${40 + i * 220}" y="${H - 30}" width="12" height="12" fill="${COLORS[n]}"/><text x="${58 + i * 220}" y="${H - 20}" font-size="12">${esc(LABELS[n])}</text>`)
    .join("\n  ");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" role="img" aria-label="Latency of the bare Worker and Tollgate, p50 and p99">
  <rect width="${W}" height="${H}" fill="#fff"/>
  <text x="${W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="700">Latency end to end in workerd (ms, lower is better)</text>
  <text x="${W / 2}" y="44" text-anchor="middle" font-size="11" fill="#555">${esc(caption)}</text>
  <text x="${W / 2}" y="60" text-anchor="middle" font-size="11" fill="#555">bars: median over rounds; whiskers: lowest and highest round</text>
  ${panel(70, 105, 260, 215, "p50", p50)}
  ${panel(430, 105, 260, 215, "p99", p99)}
  ${legend}
</svg>
`;
}
