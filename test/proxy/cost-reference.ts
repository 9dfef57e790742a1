// Plain reference models for the scanners' property tests: JSON.parse on the
// decoded text and a line-splitting event-stream parser written from the
// HTML standard. Slow and obviously right; they share nothing with the code
// under test but the result's type: the cost rule is written out here again
// (a bug in the gateway's copy must show as a difference).
import type { CostResult } from "../../src/proxy/response-cost-result";

/** The largest cost an answer may name (the gateway's MAX_RESPONSE_COST, as a number here); past it the cost is unusable. */
const REFERENCE_MAX_COST = 1_000_000_000;

/** What a JSON number costs: a fraction rounds up, −0 is 0; a negative, infinite or too large number is unusable (null). */
function referenceCostOf(value: number): number | null {
  if (Number.isNaN(value) || value < 0 || value === Number.POSITIVE_INFINITY) return null;
  const whole = Number.isInteger(value) ? value : Math.trunc(value) + 1;
  const cost = Object.is(whole, -0) ? 0 : whole;
  return cost > REFERENCE_MAX_COST ? null : cost;
}

const INDEX = /^(0|[1-9][0-9]*)$/;

/** The cost JSON.parse finds at `path` in `text` (as a decoder gives it: BOM dropped, bad bytes replaced). */
export function referenceJsonCost(text: string, path: string): CostResult {
  if (text.trim() === "") return { found: false, reason: "absent" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { found: false, reason: "malformed" };
  }
  for (const segment of path.split(".")) {
    if (Array.isArray(value)) {
      if (!INDEX.test(segment) || Number(segment) >= value.length) return { found: false, reason: "absent" };
      value = value[Number(segment)];
    } else if (typeof value === "object" && value !== null && Object.hasOwn(value, segment)) {
      value = (value as Record<string, unknown>)[segment];
    } else return { found: false, reason: "absent" };
  }
  if (typeof value !== "number") return { found: false, reason: "malformed" };
  const cost = referenceCostOf(value);
  return cost === null ? { found: false, reason: "malformed" } : { found: true, cost };
}

/** The data of every event an event stream dispatches, per the HTML standard's parser. */
export function referenceSseEvents(text: string): string[] {
  const body = text.startsWith("\ufeff") ? text.slice(1) : text;
  const lines = body.split(/\r\n|\r|\n/);
  // The piece after the last line ending is an incomplete line: never processed.
  lines.pop();
  const events: string[] = [];
  let data: string | null = null;
  for (const line of lines) {
    if (line === "") {
      if (data !== null) events.push(data.endsWith("\n") ? data.slice(0, -1) : data);
      data = null;
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data = `${data ?? ""}${value}\n`;
  }
  return events;
}

/** The cost of the last event whose data has a usable cost at `path`, as SseCostScanner reads a stream that ended cleanly. */
export function referenceSseCost(text: string, path: string, maxEventBytes: number): CostResult {
  const encoder = new TextEncoder();
  let found: CostResult | null = null;
  let tooLarge = false;
  let unusable = false;
  for (const data of referenceSseEvents(text)) {
    // The scanner's bound counts the data with the LF after each line.
    if (encoder.encode(data).length + 1 > maxEventBytes) {
      // Reported only for an event that might have carried the path: its last named key, or a \u escape.
      const key = path.split(".").findLast((segment) => !INDEX.test(segment));
      if (key === undefined || data.includes(`"${key}"`) || data.includes("\\u")) tooLarge = true;
      continue;
    }
    const cost = referenceJsonCost(data, path);
    if (cost.found) found = cost;
    // Not JSON (`[DONE]`) is no event of ours; JSON with an unusable value at the path is.
    else if (cost.reason === "malformed" && isJson(data)) unusable = true;
  }
  if (found !== null) return found;
  return { found: false, reason: tooLarge ? "too_large" : unusable ? "malformed" : "absent" };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
