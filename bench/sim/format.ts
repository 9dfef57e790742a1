// How the simulation's tables write numbers: grouped whole numbers, ms,
// shares and ratios.

export const int = (n: number): string => Math.round(n).toLocaleString("en-US");
export const ms = (n: number | null): string => (n === null ? "–" : `${int(n)} ms`);
export const pct = (part: number, whole: number): string => (whole === 0 ? "–" : `${((100 * part) / whole).toFixed(part === whole || part === 0 ? 0 : 1)} %`);
export const ratio = (a: number, b: number): string => (b === 0 ? "–" : (a / b).toFixed(3));
