// The gateway's own settings rows (table `settings`).
import { eq } from "drizzle-orm";
import type { Db } from "./client";
import { settings } from "./schema";

export const KEY_CHECK_SECRET = "key_check_secret";

export async function getSetting(db: Db, name: string): Promise<string | null> {
  const rows = await db.select({ value: settings.value }).from(settings).where(eq(settings.name, name)).limit(1);
  return rows[0]?.value ?? null;
}

/** Stores `value` unless the setting exists, and returns what is stored: the first writer wins. */
export async function ensureSetting(db: Db, name: string, value: string, nowMs: number): Promise<string> {
  await db.insert(settings).values({ name, value, createdAt: nowMs }).onConflictDoNothing();
  const stored = await getSetting(db, name);
  if (stored === null) throw new Error("setting vanished after insert");
  return stored;
}
