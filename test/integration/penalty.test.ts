// The penalty box through the Worker, on clocks the tests hold: a caller a
// limit refuses `after` times within `within_s` is blocked for `block_s`, at
// once in the isolate that saw it and in a second isolate (a second runtime
// over the same D1) within cache_ttl_s; the block lifts after block_s, or
// early by DELETE /blocks/{id}; it is listed, explained, audited without the
// address, and its block.hit alert names it as a penalty. A shadow limit's
// penalty is a shadow block. The write bounds hold.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { blocks } from "../../src/db/schema";
import { PenaltyBox } from "../../src/limits/penalty";
import { healthOf } from "../../src/runtime";
import { clockedGateway, eventually, gatewayRequest, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, jsonOf, testConfig } from "./admin-helpers";
import { eq } from "drizzle-orm";

const PENALTY = { after: 2, within_s: 60, block_s: 20 };

function configWith(limit: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({
    cache_ttl_s: 2,
    categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [limit] } } },
    ...extra,
  });
}

interface Listed {
  id: number;
  target: string;
  reason: string | null;
  expires_at: string | null;
  active: boolean;
  shadow: boolean;
  penalty: string | null;
}

async function penaltyBlocksOf(config: Record<string, unknown>, target: string): Promise<Listed[]> {
  const rows = await database(env.DB).select().from(blocks).where(eq(blocks.target, target));
  const listed: Listed[] = [];
  for (const row of rows) listed.push(await jsonOf<Listed>(await adminCall("GET", `/blocks/${row.id}`, config), 200));
  return listed;
}

describe("the penalty box", () => {
  it("blocks a caller refused `after` times at once here, in a second isolate within cache_ttl_s, and lifts after block_s", async () => {
    const config = configWith({ count: 1, window_s: 5, penalty: PENALTY });
    const ip = uniqueIp();
    const t0 = Date.now();
    const here = clockedGateway(config, {}, t0);
    const there = clockedGateway(config, {}, t0);
    const call = (g: typeof here) => g.call(gatewayRequest("/things", { ip }), { settle: true });
    // The second isolate loads its policy (and charges its own limit) before the penalty exists.
    expect((await call(there)).status).toBe(200);

    expect((await call(here)).status).toBe(200);
    here.clock.nowMs += 100;
    expect((await call(here)).status).toBe(429);
    here.clock.nowMs += 100;
    expect((await call(here)).status).toBe(429);
    here.clock.nowMs += 100;
    const blocked = await call(here);
    expect(blocked.status).toBe(403);
    const problem = await problemOf(blocked);
    expect(problem).toMatchObject({ code: "blocked", reason: "penalty:request-ip-5s" });
    expect(blocked.headers.get("retry-after")).toBe("20");

    const [row] = await penaltyBlocksOf(config, `ip:${ip}`);
    expect(row).toMatchObject({ reason: "penalty:request-ip-5s", penalty: "request-ip-5s", shadow: false, active: true });
    expect(Date.parse(row!.expires_at!)).toBe(t0 + 200 + 20_000);

    // The other isolate keeps its snapshot for cache_ttl_s (2 s), then blocks too.
    there.clock.nowMs = t0 + 1_000;
    expect((await call(there)).status).toBe(429);
    there.clock.nowMs = t0 + 2_300;
    expect((await call(there)).status).toBe(403);

    // block_s later, both let the caller in again (its limit has long earned back).
    here.clock.nowMs = t0 + 200 + 20_000;
    there.clock.nowMs = t0 + 200 + 20_000;
    expect((await call(here)).status).toBe(200);
    expect((await call(there)).status).toBe(200);
  });

  it("is lifted early by DELETE /blocks/{id}, is explained and listed, and is audited without the address", async () => {
    const config = configWith({ count: 1, window_s: 5, penalty: { after: 1, within_s: 60, block_s: 600 } });
    const ip = uniqueIp();
    const g = clockedGateway(config);
    const call = () => g.call(gatewayRequest("/things", { ip }), { settle: true });
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(429);
    expect((await call()).status).toBe(403);

    const [row] = await penaltyBlocksOf(config, `ip:${ip}`);
    const explained = await jsonOf<{ block: Listed | null }>(await adminCall("GET", `/callers/ip:${ip}`, config), 200);
    expect(explained.block).toMatchObject({ id: row!.id, penalty: "request-ip-5s" });
    const listed = await jsonOf<{ blocks: Listed[]; next_cursor: string | null }>(await adminCall("GET", `/blocks?cursor=${row!.id - 1}&limit=1`, config), 200);
    expect(listed.blocks[0]).toMatchObject({ id: row!.id, target: `ip:${ip}`, penalty: "request-ip-5s" });

    const audit = await jsonOf<{ events: { kind: string; actor: string; subject: string; detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?kind=block_penalty&caller=ip:${ip}`, config), 200);
    expect(audit.events).toHaveLength(1);
    expect(audit.events[0]).toMatchObject({ actor: "gateway", detail: { policy: "request-ip-5s", after: 1, within_s: 60, block_s: 600, shadow: false } });
    expect(audit.events[0]!.subject).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(JSON.stringify(audit.events[0])).not.toContain(ip);

    await jsonOf(await adminCall("DELETE", `/blocks/${row!.id}`, config), 200);
    // This isolate drops its own copy once a snapshot loaded after the row landed says so: within cache_ttl_s.
    g.clock.nowMs += 5_000;
    expect((await call()).status).toBe(200);
    const deleted = await jsonOf<{ events: { detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?kind=block_deleted&caller=ip:${ip}`, config), 200);
    expect(JSON.stringify(deleted.events)).not.toContain(ip);
  });

  it("raises block.hit naming the penalty", async () => {
    const config = configWith({ count: 1, window_s: 5, penalty: { after: 1, within_s: 60, block_s: 600 } }, { alerts: { webhook_url: `${env.ORIGIN_URL}/__origin/webhook/${unique("penalty-hook")}` } });
    const sent: { type: string; data: Record<string, unknown> }[] = [];
    const ALERTS = { send: async (message: unknown) => void sent.push(message as (typeof sent)[number]) };
    const ip = uniqueIp();
    const g = clockedGateway(config);
    for (let i = 0; i < 4; i++) await g.call(gatewayRequest("/things", { ip }), { settle: true, env: { ALERTS } });
    await eventually(() => sent.some((a) => a.type === "block.hit"), "the penalty's block.hit is queued");
    const hits = sent.filter((a) => a.type === "block.hit");
    expect(hits).toHaveLength(1);
    expect(hits[0]!.data).toMatchObject({ penalty: "penalty:request-ip-5s" });
  });

  it("makes a shadow limit's penalty a shadow block: marked and forwarded, never refused", async () => {
    const config = configWith({ count: 100, window_s: 60 });
    const tried = testConfig({
      cache_ttl_s: 2,
      categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [{ count: 100, window_s: 60 }, { count: 1, window_s: 5, shadow: true, penalty: { after: 1, within_s: 60, block_s: 600 } }] } } },
    });
    const ip = uniqueIp();
    const g = clockedGateway(tried);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await g.call(gatewayRequest("/things", { ip }), { settle: true }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers[1]!.headers.get("tollgate-shadow")).toBe('rate_limited;policy="request-ip-5s"');
    expect(answers[2]!.headers.get("tollgate-shadow")).toBe('blocked;policy="penalty:request-ip-5s", rate_limited;policy="request-ip-5s"');
    const [row] = await penaltyBlocksOf(config, `ip:${ip}`);
    expect(row).toMatchObject({ shadow: true, penalty: "request-ip-5s" });
  });

  it("never replaces an operator's block", async () => {
    const config = configWith({ count: 1, window_s: 5, penalty: { after: 1, within_s: 60, block_s: 600 } });
    const ip = uniqueIp();
    const admin = await jsonOf<Listed>(await adminCall("POST", "/blocks", config, { body: { target: `ip:${ip}`, reason: "operator", shadow: true } }), 201);
    const g = clockedGateway(config);
    for (let i = 0; i < 3; i++) await g.call(gatewayRequest("/things", { ip }), { settle: true });
    const [row] = await penaltyBlocksOf(config, `ip:${ip}`);
    expect(row).toMatchObject({ id: admin.id, reason: "operator", penalty: null, shadow: true, expires_at: null });
  });
});

describe("the penalty box's bounds", () => {
  const penalty = { after: 2, withinMs: 60_000, blockMs: 30_000 };
  const at = Date.parse("2031-03-01T00:00:00Z");

  it("earns one penalty per caller and policy per block_s, however many refusals follow", () => {
    const box = new PenaltyBox(600);
    const c = { target: "ip:192.0.2.1", policy: "request-ip-60s", limitSalt: 7, penalty, shadow: false };
    const earned = Array.from({ length: 50 }, (_, i) => box.earned(c, at + i * 100));
    expect(earned.filter(Boolean)).toHaveLength(1);
    expect(earned.indexOf(true)).toBe(1);
    // Another policy is another count; past block_s the same one can earn again.
    expect(box.earned({ ...c, policy: "request-ip-3600s" }, at + 5_000)).toBe(false);
    expect(box.earned({ ...c, policy: "request-ip-3600s" }, at + 5_001)).toBe(true);
    expect(box.earned(c, at + 100 + 30_000)).toBe(false);
    expect(box.earned(c, at + 100 + 30_001)).toBe(true);
  });

  it("counts only the refusals within within_s", () => {
    const box = new PenaltyBox(600);
    const c = { target: "key:abcdefabcdef", policy: "request-key-60s", limitSalt: 1, penalty, shadow: false };
    expect(box.earned(c, at)).toBe(false);
    expect(box.earned(c, at + 60_000)).toBe(false);
    expect(box.earned(c, at + 60_001)).toBe(true);
  });

  it("writes at most max_per_minute penalties per isolate, counting the rest, however many callers earn one", () => {
    const box = new PenaltyBox(600);
    let written = 0;
    for (let i = 0; i < 1_000; i++) {
      const c = { target: `ip:198.18.${i >> 8}.${i & 255}`, policy: "request-ip-60s", limitSalt: 1, penalty: { ...penalty, after: 1 }, shadow: false };
      if (box.earned(c, at + i)) written++;
    }
    expect(written).toBe(600);
    expect(box.health()).toEqual({ imposed: 600, dropped: 400, max_per_minute: 600 });
    const next = { target: "ip:198.18.200.1", policy: "request-ip-60s", limitSalt: 1, penalty: { ...penalty, after: 1 }, shadow: false };
    expect(box.earned(next, at + 60_000)).toBe(true);
  });

  it("keeps the penalty writes of a flood of callers within penalty.max_per_minute, and health says how many it dropped", async () => {
    const config = configWith({ count: 1, window_s: 60, penalty: { after: 1, within_s: 60, block_s: 60 } }, { penalty: { max_per_minute: 3 } });
    const g = clockedGateway(config);
    const ips = Array.from({ length: 8 }, () => uniqueIp());
    for (const ip of ips) {
      await g.call(gatewayRequest("/things", { ip }), { settle: true });
      await g.call(gatewayRequest("/things", { ip }), { settle: true });
    }
    let written = 0;
    for (const ip of ips) written += (await database(env.DB).select().from(blocks).where(eq(blocks.target, `ip:${ip}`))).length;
    expect(written).toBe(3);
    expect(g.runtime.penalties.health()).toMatchObject({ imposed: 3, dropped: 5, max_per_minute: 3 });
    expect(healthOf(g.runtime, env as never).penalties).toEqual({ imposed: 3, dropped: 5, max_per_minute: 3 });
  });
});
