// Which origin statuses a route's `charge_on_status` names: codes 100–599 or
// classes "1xx".."5xx". Compiled once into a 600-entry table, so a match is
// one index.

/** Statuses to charge on: `has[status]` is 1 for a named code or class. */
export interface StatusSet {
  readonly has: Uint8Array;
  /** As written, for explain and errors. */
  readonly spec: readonly (number | string)[];
}

export type StatusSetResult = { ok: true; set: StatusSet } | { ok: false; index: number | null; message: string };

const CLASS = /^[1-5]xx$/;
const MAX_ENTRIES = 100;

/** Parses a `charge_on_status` value; on failure, the entry at fault (null: the value itself) and why. */
export function parseStatusSet(value: unknown): StatusSetResult {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ENTRIES) {
    return { ok: false, index: null, message: `must be a list of 1 to ${MAX_ENTRIES} status codes (100–599) or classes such as "4xx"` };
  }
  const has = new Uint8Array(600);
  for (let i = 0; i < value.length; i++) {
    const entry: unknown = value[i];
    if (typeof entry === "number") {
      if (!Number.isInteger(entry) || entry < 100 || entry > 599) return { ok: false, index: i, message: "a status code must be a whole number from 100 to 599" };
      has[entry] = 1;
    } else if (typeof entry === "string" && CLASS.test(entry)) {
      const base = Number(entry[0]) * 100;
      has.fill(1, base, base + 100);
    } else {
      return { ok: false, index: i, message: 'must be a status code (100–599) or a class "1xx", "2xx", "3xx", "4xx" or "5xx"' };
    }
  }
  return { ok: true, set: { has, spec: Object.freeze([...(value as (number | string)[])]) } };
}

/** Whether `status` is one the set names. */
export function statusMatches(set: StatusSet, status: number): boolean {
  return status >= 0 && status < 600 && set.has[status] === 1;
}
