// A CSV writer for spreadsheets (RFC 4180 and the OWASP CSV-injection rule).
// Pure: strings in, strings out. Every text cell is quoted, with its double
// quotes doubled, so commas, quotes, CR and LF inside a cell are data. A text
// cell a spreadsheet would read as a formula gets a leading `'`, inside the
// quotes; the rest of the cell is written as it is. Integers are written bare
// and exactly, so a negative count stays a number (`-2`), never `'-2`.

/** RFC 4180's record separator. */
export const CSV_LINE_END = "\r\n";

/** What a spreadsheet treats as the start of a formula (or of a cell it splits). */
const FORMULA_START = /^[=+\-@\t\r\n]/;
/** Spaces a spreadsheet skips before it looks for `=`; after NFKC, U+00A0, U+3000 and the like are U+0020. */
const LEADING_SPACES = /^ +/;

/**
 * True when `text` would start a formula: its first character is `=`, `+`,
 * `-`, `@`, tab, CR or LF, as written or after NFKC normalisation (full-width
 * `＝` is `=`) and leading spaces (`  =1`).
 */
export function startsFormula(text: string): boolean {
  if (FORMULA_START.test(text)) return true;
  return FORMULA_START.test(text.normalize("NFKC").replace(LEADING_SPACES, ""));
}

/** A quoted text cell: `'` first when it would start a formula, `"` doubled. */
export function csvText(text: string): string {
  const guarded = startsFormula(text) ? `'${text}` : text;
  return `"${guarded.replaceAll('"', '""')}"`;
}

/**
 * A number cell: a safe integer is written bare, digit for digit. Anything
 * else (a fraction, a value beyond 2^53) cannot be written exactly as an
 * integer, so it becomes a text cell rather than a rewritten number.
 */
export function csvInteger(value: number): string {
  return Number.isSafeInteger(value) ? String(value) : csvText(String(value));
}

export type CsvCell = string | number;

/** One record, CRLF-terminated: strings as text cells, numbers as integer cells. */
export function csvRecord(cells: readonly CsvCell[]): string {
  return cells.map((cell) => (typeof cell === "number" ? csvInteger(cell) : csvText(String(cell)))).join(",") + CSV_LINE_END;
}
