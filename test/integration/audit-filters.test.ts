// GET /audit: the kind, tenant and since filters and cursor paging, over
// events seeded straight into audit_events. Every test filters by a tenant or
// kind of its own, since the file's D1 is shared by its tests.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type AuditEventInput, insertAuditEvent } from "../../src/db/audit";
import { database } from "../../src/db/client";
import { unique } from "../helpers";
import { adminCall, AUDITOR_TOKEN, jsonOf, testConfig } from "./admin-helpers";

const CONFIG = testConfig();
const db = database(env.DB);

interface AuditEventOut {
  id: number;
  at: string;
  kind: string;
  actor: string;
  tenant: string | null;
  subject: string | null;
  detail: Record<string, unknown>;
}
interface AuditPage {
  events: AuditEventOut[];
  next_cursor: string | null;
}

/** A kind no other test uses (kinds allow only [a-z0-9_]). */
function uniqueKind(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
}

async function seed(events: readonly Partial<AuditEventInput>[]): Promise<void> {
  const [first, ...rest] = events.map((e) =>
    insertAuditEvent(db, { atMs: Date.UTC(2033, 0, 1), kind: "seeded", actor: "gateway", tenant: null, subject: null, detail: {}, ...e }),
  );
  if (first !== undefined) await db.batch([first, ...rest]);
}

async function audit(query: Record<string, string>, token?: string): Promise<AuditPage> {
  return jsonOf<AuditPage>(await adminCall("GET", `/audit?${new URLSearchParams(query)}`, CONFIG, token === undefined ? {} : { token }), 200);
}

/** Every page, following next_cursor. */
async function allPages(query: Record<string, string>): Promise<AuditPage[]> {
  const pages: AuditPage[] = [];
  let cursor: string | null = null;
  do {
    const page: AuditPage = await audit(cursor === null ? query : { ...query, cursor });
    pages.push(page);
    cursor = page.next_cursor;
  } while (cursor !== null && pages.length < 50);
  return pages;
}

describe("GET /audit filters", () => {
  it("filters by kind, across tenants and with none", async () => {
    const kind = uniqueKind("sustained");
    const other = uniqueKind("other");
    const t1 = unique("audit-kind-a");
    const t2 = unique("audit-kind-b");
    await seed([
      { kind, tenant: t1, subject: "1".repeat(64), detail: { category: "default", count: 101, window_start_ms: 0 } },
      { kind: other, tenant: t1 },
      { kind, tenant: t2 },
      { kind, tenant: null },
    ]);
    const page = await audit({ kind });
    expect(page.events.map((e) => [e.kind, e.tenant])).toEqual([
      [kind, null],
      [kind, t2],
      [kind, t1],
    ]);
    expect(page.events[2]).toMatchObject({ actor: "gateway", subject: "1".repeat(64), detail: { category: "default", count: 101, window_start_ms: 0 }, at: "2033-01-01T00:00:00.000Z" });
    expect(page.next_cursor).toBeNull();
    expect((await audit({ kind: uniqueKind("never") })).events).toEqual([]);
  });

  it("filters by tenant, and by tenant and kind together", async () => {
    const kind = uniqueKind("k");
    const t1 = unique("audit-tenant-a");
    const t2 = unique("audit-tenant-b");
    await seed([{ kind, tenant: t1 }, { kind: "key_minted", tenant: t1 }, { kind, tenant: t2 }, { kind: "key_minted", tenant: t2 }]);
    expect((await audit({ tenant: t1 })).events.map((e) => [e.kind, e.tenant])).toEqual([
      ["key_minted", t1],
      [kind, t1],
    ]);
    expect((await audit({ tenant: t2, kind })).events.map((e) => [e.kind, e.tenant])).toEqual([[kind, t2]]);
    // The auditor token reads the same log.
    expect((await audit({ tenant: t2 }, AUDITOR_TOKEN)).events).toHaveLength(2);
  });

  it("keeps events at or after `since`, in UTC or with an offset, to the millisecond", async () => {
    const tenant = unique("audit-since");
    const t0 = Date.UTC(2033, 5, 1, 12);
    await seed([
      { tenant, atMs: t0 - 1, subject: "before" },
      { tenant, atMs: t0, subject: "at" },
      { tenant, atMs: t0 + 1, subject: "after" },
      { tenant, atMs: t0 + 86_400_000, subject: "next day" },
    ]);
    const subjects = async (since: string) => (await audit({ tenant, since })).events.map((e) => e.subject);
    expect(await subjects(new Date(t0).toISOString())).toEqual(["next day", "after", "at"]);
    expect(await subjects("2033-06-01T14:00:00.000+02:00")).toEqual(["next day", "after", "at"]);
    expect(await subjects("2033-06-01T12:00:00.001Z")).toEqual(["next day", "after"]);
    expect(await subjects("2033-06-01T12:00:00Z")).toEqual(["next day", "after", "at"]);
    expect(await subjects("2033-06-02T12:00:00.001Z")).toEqual([]);
    expect(await subjects("2000-01-01T00:00:00Z")).toEqual(["next day", "after", "at", "before"]);
  });

  it("pages newest first with a cursor: every event once, the filters kept, no cursor after the last page", async () => {
    const tenant = unique("audit-pages");
    const kind = uniqueKind("paged");
    const t0 = Date.UTC(2033, 8, 1);
    // Seven matching events, interleaved with others the filters must skip.
    await seed(
      Array.from({ length: 14 }, (_, i) => (i % 2 === 0 ? { tenant, kind, atMs: t0 + i, subject: `s${i / 2}` } : { tenant, kind: "other_kind", atMs: t0 + i })),
    );
    const pages = await allPages({ tenant, kind, limit: "3" });
    expect(pages.map((p) => p.events.length)).toEqual([3, 3, 1]);
    const subjects = pages.flatMap((p) => p.events.map((e) => e.subject));
    expect(subjects).toEqual(["s6", "s5", "s4", "s3", "s2", "s1", "s0"]);
    const ids = pages.flatMap((p) => p.events.map((e) => e.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    for (const page of pages.slice(0, -1)) expect(page.next_cursor).toBe(String(page.events.at(-1)?.id));
    expect(pages.at(-1)?.next_cursor).toBeNull();

    // A page that ends exactly at the last event has no cursor.
    const exact = await allPages({ tenant, kind, limit: "7" });
    expect(exact).toHaveLength(1);
    expect(exact[0]?.next_cursor).toBeNull();

    // Paging with since: the cursor keeps it.
    const recent = await allPages({ tenant, kind, since: new Date(t0 + 6).toISOString(), limit: "2" });
    expect(recent.flatMap((p) => p.events.map((e) => e.subject))).toEqual(["s6", "s5", "s4", "s3"]);
  });

  it("starts a page after the cursor, even one from another filter or an event that no longer exists", async () => {
    const tenant = unique("audit-cursor");
    await seed([{ tenant, subject: "a" }, { tenant, subject: "b" }, { tenant, subject: "c" }]);
    const all = await audit({ tenant });
    const ids = all.events.map((e) => e.id);
    expect(all.events.map((e) => e.subject)).toEqual(["c", "b", "a"]);
    const [newest, middle] = ids;
    expect((await audit({ tenant, cursor: String(newest) })).events.map((e) => e.subject)).toEqual(["b", "a"]);
    expect((await audit({ tenant, cursor: String(middle) })).events.map((e) => e.subject)).toEqual(["a"]);
    expect((await audit({ tenant, cursor: String((newest ?? 0) + 1_000_000) })).events.map((e) => e.subject)).toEqual(["c", "b", "a"]);
    expect((await audit({ tenant, cursor: "1" })).events).toEqual([]);
  });

  it("refuses a malformed kind, tenant, since, cursor or limit with 400", async () => {
    const queries: Record<string, string>[] = [
      { kind: "Rate_Limit" },
      { kind: "rate-limit" },
      { tenant: "Upper" },
      { since: "2033-01-01" },
      { since: "2033-01-01T00:00:00" },
      { since: "yesterday" },
      { since: "2033-02-30T00:00:00Z" },
      { cursor: "0" },
      { cursor: "-1" },
      { cursor: "abc" },
      { cursor: "12345678901234567" },
      { limit: "0" },
      { limit: "201" },
      { unknown: "x" },
    ];
    for (const query of queries) {
      const response = await adminCall("GET", `/audit?${new URLSearchParams(query)}`, CONFIG);
      expect(response.status, JSON.stringify(query)).toBe(400);
      expect(response.headers.get("content-type")).toContain("application/problem+json");
      await response.body?.cancel();
    }
  });
});
