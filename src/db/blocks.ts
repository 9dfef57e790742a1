// Query helpers for blocks: one row per canonical target, which
// the admin API has validated and normalised (src/admin/caller-keys.ts).
import { asc, eq, gt, isNull, or } from "drizzle-orm";
import type { Db } from "./client";
import { blocks } from "./schema";

export interface BlockRow {
  readonly id: number;
  /** `ip:<IPv4 or IPv6 /64>`, `net:<network>/<prefix>`, `key:<id>`, `jwt:<64 hex>` or `tenant:<slug>`. */
  readonly target: string;
  /** Unix ms at which the block stops applying; null: never. */
  readonly expiresAt: number | null;
  readonly reason: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type NewBlock = Omit<BlockRow, "id">;

/**
 * The blocks in force at `nowMs`, for the gateway's snapshot. Each row keeps
 * its `expiresAt`: a snapshot held past it must stop applying that block.
 */
export function loadActiveBlocks(db: Db, nowMs: number): Promise<BlockRow[]> {
  return activeBlocksQuery(db, nowMs);
}

/** The same, as a query for a batch. */
export function activeBlocksQuery(db: Db, nowMs: number) {
  return db.select().from(blocks).where(or(isNull(blocks.expiresAt), gt(blocks.expiresAt, nowMs)));
}

export async function getBlock(db: Db, id: number): Promise<BlockRow | null> {
  const rows = await db.select().from(blocks).where(eq(blocks.id, id)).limit(1);
  return rows[0] ?? null;
}

export async function getBlockByTarget(db: Db, target: string): Promise<BlockRow | null> {
  const rows = await db.select().from(blocks).where(eq(blocks.target, target)).limit(1);
  return rows[0] ?? null;
}

/**
 * Blocks the target, or replaces the expiry and reason of its block (the id
 * and created_at stay), for a batch; `.returning()` gives the row.
 */
export function putBlock(db: Db, block: NewBlock) {
  return db
    .insert(blocks)
    .values(block)
    .onConflictDoUpdate({ target: blocks.target, set: { expiresAt: block.expiresAt, reason: block.reason, updatedAt: block.updatedAt } })
    .returning();
}

/** Blocks in id order (creation order) after `afterId`, at most `limit`. */
export function listBlocks(db: Db, page: { afterId?: number | undefined; limit: number }): Promise<BlockRow[]> {
  return db
    .select()
    .from(blocks)
    .where(page.afterId === undefined ? undefined : gt(blocks.id, page.afterId))
    .orderBy(asc(blocks.id))
    .limit(page.limit);
}

export function deleteBlock(db: Db, id: number) {
  return db.delete(blocks).where(eq(blocks.id, id));
}
