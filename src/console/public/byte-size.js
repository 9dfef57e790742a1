// @ts-check
// Sizes as people write them: "500 MB", "2 GiB", "1.5 GB", "1200" (bytes).
// Decimal units are powers of 1000 (kB, MB, GB, TB), binary ones of 1024
// (KiB, MiB, GiB, TiB), case aside; the API still gets whole bytes. A stored
// size shows in the largest unit that holds it exactly, so what is shown is
// what is saved.

/** Unit → bytes. Lower-case keys: "MB" and "mb" read the same. */
const UNITS = /** @type {Record<string, number>} */ ({
  b: 1,
  byte: 1,
  bytes: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
});

/** The units a size may be shown in, largest first. */
const SHOWN = /** @type {const} */ ([
  ["TiB", 2 ** 40],
  ["TB", 1e12],
  ["GiB", 2 ** 30],
  ["GB", 1e9],
  ["MiB", 2 ** 20],
  ["MB", 1e6],
  ["KiB", 2 ** 10],
  ["kB", 1e3],
]);

/** What a size field says it takes. */
export const SIZE_UNITS_HINT = "a number and a unit: B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024); a bare number is bytes.";

const SIZE = /^(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)$/i;

/**
 * The bytes `text` says, or why it says none. Commas and spaces between
 * digit groups are allowed ("1,000,000"). Empty text is not a size: the
 * caller decides what empty means.
 * @param {string} text
 * @returns {{ ok: true, bytes: number } | { ok: false, message: string }}
 */
export function parseSize(text) {
  const compact = text.trim().replace(/(\d)[,_ ](?=\d{3}\b)/g, "$1");
  const match = SIZE.exec(compact);
  if (match === null) return { ok: false, message: `not a size: write a number and a unit, such as 500 MB or 2 GiB` };
  const unitName = (match[2] ?? "").toLowerCase();
  const unit = unitName === "" ? 1 : UNITS[unitName];
  if (unit === undefined) return { ok: false, message: `${match[2]} is not a unit: use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB` };
  const bytes = Number(match[1]) * unit;
  // Within a part in 10^12 of a whole number: "1.1 GB" is 1,100,000,000 bytes, not 1,100,000,000.0000002.
  const whole = Math.round(bytes);
  if (Math.abs(bytes - whole) > Math.max(1e-9, bytes * 1e-12)) return { ok: false, message: `${text.trim()} is not a whole number of bytes` };
  if (!Number.isSafeInteger(whole)) return { ok: false, message: `${text.trim()} is too large` };
  return { ok: true, bytes: whole };
}

/**
 * A size as it is most simply written exactly: in the unit that needs the
 * fewest digits (at most three decimals), the larger unit on a tie, else in
 * bytes: 500000000 → "500 MB", 2147483648 → "2 GiB", 1500000 → "1.5 MB",
 * 1234567 → "1,234,567 B".
 * @param {number} bytes
 */
export function sizeText(bytes) {
  let best = `${bytes.toLocaleString("en-US")} B`;
  let bestDigits = String(bytes).length;
  for (const [unit, size] of SHOWN) {
    const thousandths = (bytes * 1000) / size;
    if (bytes < size || !Number.isInteger(thousandths)) continue;
    const value = thousandths / 1000;
    const digits = String(value).replace(".", "").length;
    if (digits < bestDigits) {
      best = `${value} ${unit}`;
      bestDigits = digits;
    }
  }
  return best;
}
