// Small multiples of per-second lines, hand-written SVG: one panel per
// scenario and measure, each with its own y scale, a shared legend, and a
// horizontal mark where a panel has one (the object's capacity, a budget's
// amount). Text is escaped; nothing else goes in unescaped.

export interface Line {
  readonly label: string;
  readonly color: string;
  readonly values: readonly number[];
  readonly dashed?: boolean;
}

export interface Panel {
  readonly title: string;
  readonly lines: readonly Line[];
  readonly mark?: { readonly value: number; readonly label: string; readonly color: string };
}

export interface PanelsChart {
  readonly title: string;
  readonly caption: string;
  readonly xLabel: string;
  readonly columns: number;
  readonly panels: readonly Panel[];
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** The top of a panel's axis: four gridline steps of 1, 2, 2.5 or 5 × 10^k that reach `v`. */
function niceMax(v: number): number {
  if (!(v > 0)) return 4;
  const step = v / 4;
  const p = 10 ** Math.floor(Math.log10(step));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= step) return 4 * m * p;
  return 40 * p;
}

function axisText(v: number): string {
  if (v >= 1_000_000) return `${Number((v / 1_000_000).toFixed(1))}M`;
  if (v >= 1000) return `${Number((v / 1000).toFixed(1))}k`;
  return String(Number(v.toFixed(2)));
}

const PANEL_W = 210;
const PANEL_H = 130;
const GAP_X = 62;
const GAP_Y = 64;
const LEFT = 56;
const TOP = 78;

function panelSvg(panel: Panel, x0: number, y0: number, xLabel: string): string {
  const length = Math.max(2, ...panel.lines.map((l) => l.values.length));
  const top = Math.max(panel.mark?.value ?? 0, ...panel.lines.flatMap((l) => l.values));
  const yMax = niceMax(top * 1.05);
  const xOf = (i: number): number => x0 + (i / (length - 1)) * PANEL_W;
  const yOf = (v: number): number => y0 + PANEL_H - (v / yMax) * PANEL_H;
  const out: string[] = [`<text x="${x0 + PANEL_W / 2}" y="${y0 - 10}" text-anchor="middle" font-size="12" font-weight="600">${esc(panel.title)}</text>`];
  for (let k = 0; k <= 4; k++) {
    const v = (yMax * k) / 4;
    const y = yOf(v).toFixed(1);
    out.push(`<line x1="${x0}" y1="${y}" x2="${x0 + PANEL_W}" y2="${y}" stroke="#e3e5e8"/>`);
    out.push(`<text x="${x0 - 5}" y="${(yOf(v) + 4).toFixed(1)}" text-anchor="end" font-size="10" fill="#555">${esc(axisText(v))}</text>`);
  }
  for (const at of [0, Math.floor((length - 1) / 2), length - 1]) {
    out.push(`<text x="${xOf(at).toFixed(1)}" y="${y0 + PANEL_H + 14}" text-anchor="middle" font-size="10" fill="#555">${at}</text>`);
  }
  out.push(`<text x="${x0 + PANEL_W / 2}" y="${y0 + PANEL_H + 27}" text-anchor="middle" font-size="10" fill="#555">${esc(xLabel)}</text>`);
  if (panel.mark !== undefined) {
    const y = yOf(panel.mark.value).toFixed(1);
    out.push(`<line x1="${x0}" y1="${y}" x2="${x0 + PANEL_W}" y2="${y}" stroke="${panel.mark.color}" stroke-dasharray="2 3" stroke-width="1.5"><title>${esc(panel.mark.label)}</title></line>`);
  }
  for (const line of panel.lines) {
    if (line.values.length === 0) continue;
    const points = line.values.map((v, i) => `${xOf(i).toFixed(1)},${yOf(v).toFixed(1)}`).join(" ");
    const dash = line.dashed === true ? ` stroke-dasharray="5 3"` : "";
    out.push(`<polyline fill="none" stroke="${line.color}" stroke-width="1.6"${dash} points="${points}"><title>${esc(line.label)}</title></polyline>`);
  }
  out.push(`<line x1="${x0}" y1="${y0 + PANEL_H}" x2="${x0 + PANEL_W}" y2="${y0 + PANEL_H}" stroke="#333"/>`);
  return out.join("\n  ");
}

/** The chart as a standalone SVG document. */
export function panelsSvg(chart: PanelsChart): string {
  const rows = Math.ceil(chart.panels.length / chart.columns);
  const width = LEFT + chart.columns * (PANEL_W + GAP_X);
  const legendY = TOP + rows * (PANEL_H + GAP_Y) + 4;
  const height = legendY + 26;
  const legend = new Map<string, { color: string; dashed: boolean }>();
  for (const panel of chart.panels) {
    for (const line of panel.lines) if (!legend.has(line.label)) legend.set(line.label, { color: line.color, dashed: line.dashed === true });
    if (panel.mark !== undefined && !legend.has(panel.mark.label)) legend.set(panel.mark.label, { color: panel.mark.color, dashed: true });
  }
  const legendSvg = [...legend].map(([label, { color, dashed }], i) => {
    const x = LEFT + i * 200;
    const dash = dashed ? ` stroke-dasharray="5 3"` : "";
    return `<line x1="${x}" y1="${legendY}" x2="${x + 22}" y2="${legendY}" stroke="${color}" stroke-width="2"${dash}/><text x="${x + 28}" y="${legendY + 4}" font-size="11">${esc(label)}</text>`;
  });
  const panels = chart.panels.map((panel, i) => panelSvg(panel, LEFT + (i % chart.columns) * (PANEL_W + GAP_X), TOP + Math.floor(i / chart.columns) * (PANEL_H + GAP_Y), chart.xLabel));
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" role="img" aria-label="${esc(chart.title)}">
  <rect width="${width}" height="${height}" fill="#fff"/>
  <text x="${width / 2}" y="24" text-anchor="middle" font-size="16" font-weight="700">${esc(chart.title)}</text>
  <text x="${width / 2}" y="44" text-anchor="middle" font-size="11" fill="#555">${esc(chart.caption)}</text>
  ${panels.join("\n  ")}
  ${legendSvg.join("\n  ")}
</svg>
`;
}
