// Query helpers for blocks: one row per canonical target, which
// the admin API has validated and normalised (src/admin/caller-keys.ts).
import { and, asc, eq, gt, isNull, or, sql } from "drizzle-orm";
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
  /** `admin` (POST /blocks) or `penalty` (a limit's penalty box). */
  readonly source: string;
  /** A shadow block refuses nothing: it marks and counts what it would refuse. */
  readonly shadow: boolean;
}

export type NewBlock = Omit<BlockRow, "id" | "source" | "shadow"> & { readonly shadow?: boolean };

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
  const shadow = block.shadow ?? false;
  return db
    .insert(blocks)
    .values({ ...block, shadow, source: "admin" })
    // An operator's block replaces a penalty on its target: it is the admin's from then on.
    .onConflictDoUpdate({ target: blocks.target, set: { expiresAt: block.expiresAt, reason: block.reason, updatedAt: block.updatedAt, shadow, source: "admin" } })
    .returning();
}

/** A penalty the gateway imposes: its target, its end, its cause (`penalty:<policy>`), whether it only shadows. */
export interface PenaltyBlock {
  readonly target: string;
  readonly expiresAt: number;
  readonly reason: string;
  readonly shadow: boolean;
  readonly nowMs: number;
}

/**
 * Blocks the target for a penalty, for a batch; `.returning()` gives the
 * row, or nothing when it was not written. It never replaces an operator's
 * block that is still in force (nor shortens a penalty that ends later);
 * an operator's block that has ended is taken over.
 */
export function putPenaltyBlock(db: Db, p: PenaltyBlock) {
  return db
    .insert(blocks)
    .values({ target: p.target, expiresAt: p.expiresAt, reason: p.reason, createdAt: p.nowMs, updatedAt: p.nowMs, source: "penalty", shadow: p.shadow })
    .onConflictDoUpdate({
      target: blocks.target,
      set: { expiresAt: p.expiresAt, reason: p.reason, updatedAt: p.nowMs, shadow: p.shadow, source: "penalty" },
      setWhere: or(
        and(eq(blocks.source, "penalty"), or(isNull(blocks.expiresAt), sql`${blocks.expiresAt} < ${p.expiresAt}`)),
        sql`${blocks.expiresAt} is not null and ${blocks.expiresAt} <= ${p.nowMs}`,
      ),
    })
    .returning();
}

/** The condition that the penalty `p` is the target's block now (for an audit insert in the same batch). */
export function penaltyWritten(p: PenaltyBlock) {
  return sql`exists (select 1 from ${blocks} where ${blocks.target} = ${p.target} and ${blocks.source} = 'penalty' and ${blocks.updatedAt} = ${p.nowMs} and ${blocks.reason} = ${p.reason})`;
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
