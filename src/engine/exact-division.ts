// Whole-number division for the engine's exact arithmetic: every operand is a
// whole number below 2^53, held in a double, and the float quotient is
// corrected by one step, so no rounding can move a decision or a delay.

/** ceil(a / b) for whole a >= 0, b >= 1 below 2^53, exact (the quotient is corrected after the float division). */
export function ceilDiv(a: number, b: number): number {
  if (b === 1) return a;
  let k = Math.ceil(a / b);
  if (k * b < a) k++;
  else if ((k - 1) * b >= a) k--;
  return k;
}

/** floor(a / b) for whole a >= 0, b >= 1 below 2^53, exact. */
export function floorDiv(a: number, b: number): number {
  if (b === 1) return a;
  let k = Math.floor(a / b);
  if (k * b > a) k--;
  else if ((k + 1) * b <= a) k++;
  return k;
}
