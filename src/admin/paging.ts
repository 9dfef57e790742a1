// Keyset paging for admin listings: ask D1 for one row more than a page, so
// the answer says whether another page follows without a count query.
import { DEFAULT_PAGE } from "./operation-schemas";

export interface Page<T> {
  readonly items: T[];
  /** The cursor for the next page (the last item's key), or null on the last page. */
  readonly nextCursor: string | null;
}

/** Rows to ask D1 for a page of `limit`. */
export function rowsToRead(limit: number | undefined): number {
  return (limit ?? DEFAULT_PAGE) + 1;
}

/** Cuts `rows` (read with rowsToRead) to the page and names the next cursor. */
export function pageOf<T>(rows: T[], limit: number | undefined, keyOf: (row: T) => string): Page<T> {
  const size = limit ?? DEFAULT_PAGE;
  const items = rows.slice(0, size);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > size && last !== undefined ? keyOf(last) : null };
}
