// The panels both plots draw per scenario: units per second (requests, what
// the exact figure admits, what was admitted) above the calls reaching the
// object against its capacity, over the seconds of demand.
import type { Panel } from "./svg-chart";

export interface PlottedRun {
  readonly name: string;
  readonly capacityPerS: number;
  readonly series: { readonly demand: number[]; readonly admitted: number[]; readonly exact: number[]; readonly calls: number[] };
}

/** One column per run: its units panel in the first row, its calls panel in the second. */
export function scenarioPanels(runs: readonly PlottedRun[], exactLabel: string): Panel[] {
  // The seconds of demand only: answers that land after it ends would read as a drop.
  const cut = (r: PlottedRun, values: number[]): number[] => values.slice(0, r.series.demand.length);
  return [
    ...runs.map((r) => ({
      title: `${r.name}: units per second`,
      lines: [
        { label: "requests", color: "#b8bcc4", values: cut(r, r.series.demand) },
        { label: exactLabel, color: "#222", values: cut(r, r.series.exact), dashed: true },
        { label: "admitted", color: "#2f6fdb", values: cut(r, r.series.admitted) },
      ],
    })),
    ...runs.map((r) => ({
      title: `${r.name}: object calls per second`,
      lines: [{ label: "calls reaching the object", color: "#e07b24", values: cut(r, r.series.calls) }],
      mark: { value: r.capacityPerS, label: "object capacity", color: "#c62828" },
    })),
  ];
}
