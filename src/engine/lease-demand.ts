// An isolate's recent demand on a lease, shared by the leases of global
// limits (lease-book.ts) and of budgets (budget-lease-book.ts): the units
// taken in the current lease-long window, and an EWMA of the units per
// window before it, which sizes the next ask beyond what waiting requests
// need.

/** The demand a lease slot keeps. */
export interface DemandWindow {
  /** When the current window began (ms). */
  windowStartMs: number;
  /** Units taken in it so far. */
  windowUnits: number;
  /** EWMA of the units taken per window before it. */
  expectedUnits: number;
}

/** Closes the windows of `windowMs` that ended by `t`: each folds into the EWMA (an empty one halves it). */
export function rollDemand(d: DemandWindow, windowMs: number, t: number): void {
  const elapsedMs = t - d.windowStartMs;
  if (elapsedMs < windowMs) return;
  const windows = Math.floor(elapsedMs / windowMs);
  let expected = (d.expectedUnits + d.windowUnits) / 2;
  for (let k = 1; k < windows && expected > 0.01; k++) expected /= 2;
  d.expectedUnits = expected < 0.01 ? 0 : expected;
  d.windowUnits = 0;
  d.windowStartMs += windows * windowMs;
}

/**
 * Units to ask beyond waiting needs when `expectedUnits` are expected over
 * a lease: f − 2√f, so a Poisson-like demand does not leave units behind;
 * none below ~4 expected (the ask is then the exact spend).
 */
export function extraFor(expectedUnits: number): number {
  return expectedUnits < 4 ? 0 : Math.floor(expectedUnits - 2 * Math.sqrt(expectedUnits));
}
