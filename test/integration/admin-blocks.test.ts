// Blocks through the admin API: every target kind, canonical
// spellings, validation naming `target`, expiry and `active`, paging,
// delete, audit subjects, and the auditor token. The gateway's enforcement is
// not here (it reads blocks through its snapshot: see loadActiveBlocks in
// test/db/admin-queries.test.ts).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { problemOf, unique } from "../helpers";
import { AUDITOR_TOKEN, adminCall, jsonOf, testConfig } from "./admin-helpers";

const CONFIG = testConfig();

interface BlockBody {
  id: number;
  target: string;
  expires_at: string | null;
  reason: string | null;
  created_at: string;
  updated_at: string;
  active: boolean;
}

interface AuditEvent {
  kind: string;
  tenant: string | null;
  subject: string | null;
  detail: Record<string, unknown>;
}

function hex64(): string {
  return (crypto.randomUUID() + crypto.randomUUID()).replaceAll("-", "").slice(0, 64);
}

/** A random 10.x.y.0/24 network base and its third octet, distinct per call with high probability. */
function network(): { a: number; b: number } {
  const n = (Math.random() * 0xffff) >>> 0;
  return { a: n >> 8, b: n & 255 };
}

function block(body: unknown, token?: string): Promise<Response> {
  return adminCall("POST", "/blocks", CONFIG, { body, ...(token === undefined ? {} : { token }) });
}

async function expectInvalid(response: Response, field: string): Promise<void> {
  const text = await response.clone().text();
  expect(response.status, text).toBe(400);
  expect(await problemOf(response)).toMatchObject({ code: "invalid_request", field });
}

describe("POST /blocks", () => {
  it("blocks each kind of target and answers 201 with the canonical target", async () => {
    const { a, b } = network();
    const slug = unique("blk");
    const jwt = hex64();
    // IPv6 groups that are never 0, so RFC 5952 spells them out.
    const g1 = (a + 1).toString(16);
    const g2 = (b + 1).toString(16);
    const cases: [string, string][] = [
      [`ip:10.${a}.${b}.9`, `ip:10.${a}.${b}.9`],
      [`ip:::ffff:10.${a}.${b}.10`, `ip:10.${a}.${b}.10`],
      [`ip:2001:db8:${g1}:${g2}:1:2:3:4`, `ip:2001:db8:${g1}:${g2}::/64`],
      [`net:10.${a}.${b}.77/24`, `net:10.${a}.${b}.0/24`],
      [`net:172.${16 + (a % 16)}.${b}.1`, `net:172.${16 + (a % 16)}.${b}.1/32`],
      [`net:::ffff:10.${a}.0.0/112`, `net:10.${a}.0.0/16`],
      [`net:2001:DB8:${g1.toUpperCase()}:${g2}:ffff::/48`, `net:2001:db8:${g1}::/48`],
      ["key:abcdefghjkmn", "key:abcdefghjkmn"],
      [`jwt:${jwt}`, `jwt:${jwt}`],
      [`tenant:${slug}`, `tenant:${slug}`],
    ];
    for (const [target, canonical] of cases) {
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
      const created = await jsonOf<BlockBody>(await block({ target, expires_at: expiresAt, reason: `blocking ${target}` }), 201);
      expect(created).toMatchObject({ target: canonical, expires_at: expiresAt, reason: `blocking ${target}`, active: true });
      expect(typeof created.id).toBe("number");
      expect(await jsonOf<BlockBody>(await adminCall("GET", `/blocks/${created.id}`, CONFIG), 200)).toEqual(created);
      // A second block of the same target, however spelled, replaces the first.
      const again = await jsonOf<BlockBody>(await block({ target }), 200);
      expect(again).toMatchObject({ id: created.id, target: canonical, expires_at: null, reason: null, created_at: created.created_at, active: true });
    }
  });

  it("refuses a bad target with 400 naming target, and a bad expiry or reason by their names", async () => {
    const targets = [
      "",
      "10.0.0.1",
      "ip:10.0.0.256",
      "ip:10.0.0.1/32",
      "ip:2001:db8::/48",
      "net:10.0.0.0/33",
      "net:2001:db8::/129",
      "net:10.0.0.0/8 ",
      "net:010.0.0.0/8",
      "net:[2001:db8::]/32",
      "net:fe80::1%eth0/64",
      "net:",
      "key:short",
      "key:ABCDEFGHJKMN",
      `jwt:${hex64().toUpperCase()}`,
      `jwt:${hex64().slice(2)}`,
      "tenant:Upper",
      "tenant:-x",
      "org:acme",
      "user:1",
      "constructor:x",
      "__proto__:x",
      `net:${"1".repeat(200)}`,
    ];
    for (const target of targets) {
      const response = await block({ target });
      const detail = String((await response.clone().json<{ detail: string }>()).detail);
      expect(detail, target).toMatch(/^target: (must be ip:<address>, net:<CIDR>, key:<id>, jwt:<64 lower-case hex>, tenant:<slug>|is not a valid [a-z]+:<[^>]+>)$/);
      await expectInvalid(response, "target");
    }
    await expectInvalid(await block({ target: 5 }), "target");
    await expectInvalid(await block({}), "target");
    await expectInvalid(await block({ target: "ip:10.0.0.1", expires_at: new Date(Date.now() - 1).toISOString() }), "expires_at");
    await expectInvalid(await block({ target: "ip:10.0.0.1", expires_at: "soon" }), "expires_at");
    await expectInvalid(await block({ target: "ip:10.0.0.1", reason: "r".repeat(257) }), "reason");
    await expectInvalid(await block({ target: "ip:10.0.0.1", until: "x" }), "until");
    await expectInvalid(await adminCall("POST", "/blocks", CONFIG, { rawBody: "[]" }), "body");
  });
});

describe("listing, expiry and removal", () => {
  it("lists blocks a page at a time in creation order, with active false once expired", async () => {
    const { a } = network();
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) ids.push((await jsonOf<BlockBody>(await block({ target: `net:10.${a}.${i}.0/24` }), 201)).id);
    const expired = unique("exp");
    // Written as the API would have, with an expiry that has since passed.
    await env.DB.prepare("insert into blocks (target, expires_at, reason, created_at, updated_at) values (?, ?, 'over', 1, 1)").bind(`tenant:${expired}`, Date.now() - 1).run();
    const expiredId = (await env.DB.prepare("select id from blocks where target = ?").bind(`tenant:${expired}`).first<{ id: number }>())!.id;

    const seen: BlockBody[] = [];
    let cursor: string | null = String(ids[0]! - 1);
    for (let pages = 0; cursor !== null && pages < 10; pages++) {
      const page: { blocks: BlockBody[]; next_cursor: string | null } = await jsonOf(await adminCall("GET", `/blocks?limit=2&cursor=${cursor}`, CONFIG), 200);
      expect(page.blocks.length).toBeLessThanOrEqual(2);
      seen.push(...page.blocks);
      cursor = page.next_cursor;
    }
    const mine = seen.filter((b) => ids.includes(b.id) || b.id === expiredId);
    expect(mine.map((b) => b.id)).toEqual([...ids, expiredId]);
    expect(mine.map((b) => b.active)).toEqual([true, true, true, false]);
    expect(seen.map((b) => b.id)).toEqual([...seen.map((b) => b.id)].sort((x, y) => x - y));
    await expectInvalid(await adminCall("GET", "/blocks?cursor=abc", CONFIG), "cursor");
  });

  it("deletes a block by id, once", async () => {
    const created = await jsonOf<BlockBody>(await block({ target: `jwt:${hex64()}` }), 201);
    expect(await jsonOf(await adminCall("DELETE", `/blocks/${created.id}`, CONFIG), 200)).toEqual({ id: created.id, target: created.target, deleted: true });
    expect((await problemOf(await adminCall("GET", `/blocks/${created.id}`, CONFIG))).code).toBe("not_found");
    expect((await problemOf(await adminCall("DELETE", `/blocks/${created.id}`, CONFIG))).code).toBe("not_found");
    await expectInvalid(await adminCall("DELETE", "/blocks/0", CONFIG), "id");
    await expectInvalid(await adminCall("DELETE", "/blocks/x1", CONFIG), "id");
  });
});

describe("audit of blocks", () => {
  it("records create, replace and delete with keyed digests as subjects for ip:, net: and jwt:, readable tenant: subjects, and the target as the operator wrote it in the detail", async () => {
    const { a, b } = network();
    const ip = `10.${a}.${b}.200`;
    const slug = unique("aud");
    for (const target of [`ip:${ip}`, `net:10.${a}.${b}.0/24`, `jwt:${hex64()}`, `tenant:${slug}`]) {
      const created = await jsonOf<BlockBody>(await block({ target, reason: "abuse" }), 201);
      await jsonOf(await block({ target, reason: "still abuse" }), 200);
      await jsonOf(await adminCall("DELETE", `/blocks/${created.id}`, CONFIG), 200);
      const { events } = await jsonOf<{ events: AuditEvent[] }>(await adminCall("GET", `/audit?caller=${encodeURIComponent(target)}`, CONFIG), 200);
      expect(events.map((e) => e.kind)).toEqual(["block_deleted", "block_replaced", "block_created"]);
      const subject = events[0]?.subject ?? "";
      if (target.startsWith("tenant:")) {
        expect(subject).toBe(target);
        expect(events.every((e) => e.tenant === slug)).toBe(true);
      } else {
        expect(subject).toMatch(/^hmac:[0-9a-f]{64}$/);
      }
      expect(events.every((e) => e.subject === subject)).toBe(true);
      expect(events[2]?.detail).toMatchObject({ reason: "abuse", expires_at: null });
      expect(events[1]?.detail).toMatchObject({ reason: "still abuse", id: created.id, previous: { reason: "abuse" } });
      // The operator's own input, not a caller's request: shown as written, so the audit reads without a digest table.
      expect(events.map((e) => (e.detail as { target?: string }).target)).toEqual([target, target, target]);
    }
  });
});

describe("the auditor token and blocks", () => {
  it("reads blocks but cannot create or delete one", async () => {
    const created = await jsonOf<BlockBody>(await block({ target: `jwt:${hex64()}` }), 201);
    await jsonOf(await adminCall("GET", "/blocks", CONFIG, { token: AUDITOR_TOKEN }), 200);
    await jsonOf(await adminCall("GET", `/blocks/${created.id}`, CONFIG, { token: AUDITOR_TOKEN }), 200);
    for (const response of [await block({ target: `jwt:${hex64()}` }, AUDITOR_TOKEN), await adminCall("DELETE", `/blocks/${created.id}`, CONFIG, { token: AUDITOR_TOKEN })]) {
      expect(response.status).toBe(403);
      expect((await problemOf(response)).code).toBe("admin_forbidden");
    }
    await jsonOf(await adminCall("GET", `/blocks/${created.id}`, CONFIG), 200);
  });
});
