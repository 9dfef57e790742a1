// The drizzle handle for a D1 binding. One per binding object: the env an
// isolate serves is the same object request after request, so this builds the
// handle once; a test that passes its own (wrapped) binding gets its own.
import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";

export type Db = DrizzleD1Database;

const handles = new WeakMap<D1Database, Db>();

export function database(d1: D1Database): Db {
  let db = handles.get(d1);
  if (db === undefined) {
    db = drizzle(d1);
    handles.set(d1, db);
  }
  return db;
}
