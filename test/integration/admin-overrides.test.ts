// Caller overrides with expiry and reason, the paged listing, `jwt:` callers,
// the refusal of `tenant:` overrides, and audit subjects that never hold an
// address or JWT digest in the clear (keyed digests under the deployment secret).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { importHmacKey as importKeyCheckSecret } from "../../src/utils/crypto";
import { auditSubject, deriveAuditSubjectKey } from "../../src/identity/audit-subject";
import { problemOf, unique } from "../helpers";
import { AUDITOR_TOKEN, adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const CONFIG = testConfig();
const LIMITS = { request: [{ count: 3, window_s: 60 }] };

interface OverrideBody {
  caller_key: string;
  limits: unknown;
  expires_at: string | null;
  reason: string | null;
  active: boolean;
  updated_at: string;
}

interface AuditEvent {
  kind: string;
  subject: string | null;
  detail: Record<string, unknown>;
}

/** 64 lower-case hex characters, unique per call: a JWT caller digest. */
function jwtDigest(prefix = ""): string {
  return (prefix + crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "")).slice(0, 64);
}

/** A random address in 198.18.0.0/15 (the benchmarking range), distinct per call with high probability. */
function address(): string {
  const n = (Math.random() * 0x1ffff) >>> 0;
  return `198.${18 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}

/** The subject the deployment stores for a caller key, computed here from the secret in D1. */
async function expectedSubject(callerKey: string): Promise<string> {
  const row = await env.DB.prepare("select value from settings where name = 'key_check_secret'").first<{ value: string }>();
  expect(row).not.toBeNull();
  return auditSubject(await deriveAuditSubjectKey(await importKeyCheckSecret(row!.value)), callerKey);
}

async function eventsFor(callerKey: string): Promise<AuditEvent[]> {
  return (await jsonOf<{ events: AuditEvent[] }>(await adminCall("GET", `/audit?caller=${encodeURIComponent(callerKey)}`, CONFIG), 200)).events;
}

async function expectInvalid(response: Response, field: string): Promise<Record<string, unknown>> {
  const text = await response.clone().text();
  expect(response.status, text).toBe(400);
  const body = await problemOf(response);
  expect(body).toMatchObject({ code: "invalid_request", field });
  return body;
}

describe("overrides with expiry and reason", () => {
  it("stores expires_at and reason, answers active, and replaces all three on the next PUT", async () => {
    const callerKey = `ip:${address()}`;
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await jsonOf<OverrideBody>(await adminCall("PUT", `/overrides/${callerKey}`, CONFIG, { body: { limits: LIMITS, expires_at: expiresAt, reason: "ticket 4711" } }), 201);
    expect(created).toMatchObject({ caller_key: callerKey, limits: LIMITS, expires_at: expiresAt, reason: "ticket 4711", active: true });
    expect(await jsonOf<OverrideBody>(await adminCall("GET", `/overrides/${callerKey}`, CONFIG), 200)).toEqual(created);

    // A zone offset is accepted and answered in UTC.
    const replaced = await jsonOf<OverrideBody>(await adminCall("PUT", `/overrides/${callerKey}`, CONFIG, { body: { limits: {}, expires_at: "2999-01-01T02:00:00+02:00" } }), 200);
    expect(replaced).toMatchObject({ limits: {}, expires_at: "2999-01-01T00:00:00.000Z", reason: null, active: true });
    const forever = await jsonOf<OverrideBody>(await adminCall("PUT", `/overrides/${callerKey}`, CONFIG, { body: { limits: {} } }), 200);
    expect(forever).toMatchObject({ expires_at: null, reason: null, active: true });
  });

  it("answers active: false once an override has expired, in the listing and alone", async () => {
    const callerKey = `jwt:${jwtDigest()}`;
    // Written as the API would have, with an expiry that has since passed.
    await env.DB.prepare("insert into caller_overrides (caller_key, limits, updated_at, expires_at, reason) values (?, '{}', 1, ?, 'old')").bind(callerKey, Date.now() - 1).run();
    const one = await jsonOf<OverrideBody>(await adminCall("GET", `/overrides/${callerKey}`, CONFIG), 200);
    expect(one).toMatchObject({ caller_key: callerKey, active: false, reason: "old" });
    const page = await jsonOf<{ overrides: OverrideBody[] }>(await adminCall("GET", `/overrides?cursor=${encodeURIComponent(callerKey.slice(0, -1))}&limit=1`, CONFIG), 200);
    expect(page.overrides[0]).toMatchObject({ caller_key: callerKey, active: false });
  });

  it("refuses an expiry in the past or malformed, and a bad reason, naming the field and changing nothing", async () => {
    const callerKey = `ip:${address()}`;
    await jsonOf(await adminCall("PUT", `/overrides/${callerKey}`, CONFIG, { body: { limits: LIMITS, reason: "kept" } }), 201);
    const cases: [unknown, string][] = [
      [{ limits: {}, expires_at: new Date(Date.now() - 1000).toISOString() }, "expires_at"],
      [{ limits: {}, expires_at: "tomorrow" }, "expires_at"],
      [{ limits: {}, expires_at: "2030-01-01T00:00:00" }, "expires_at"],
      [{ limits: {}, expires_at: 1_900_000_000_000 }, "expires_at"],
      [{ limits: {}, reason: "x".repeat(257) }, "reason"],
      [{ limits: {}, reason: 5 }, "reason"],
      [{ limits: {}, expiry: "2030-01-01T00:00:00Z" }, "expiry"],
    ];
    for (const [body, field] of cases) await expectInvalid(await adminCall("PUT", `/overrides/${callerKey}`, CONFIG, { body }), field);
    expect(await jsonOf<OverrideBody>(await adminCall("GET", `/overrides/${callerKey}`, CONFIG), 200)).toMatchObject({ limits: LIMITS, reason: "kept", expires_at: null });
  });
});

describe("caller keys of overrides", () => {
  it("accepts jwt:<64 lower-case hex> and spells IPv6 and IPv4-mapped addresses as the limiter keys them", async () => {
    const jwt = `jwt:${jwtDigest()}`;
    expect(await jsonOf<OverrideBody>(await adminCall("PUT", `/overrides/${jwt}`, CONFIG, { body: { limits: LIMITS } }), 201)).toMatchObject({ caller_key: jwt });
    const v6 = await jsonOf<OverrideBody>(await adminCall("PUT", "/overrides/ip:2001:db8:77:1:aaaa:bbbb:cccc:dddd", CONFIG, { body: { limits: LIMITS } }), 201);
    expect(v6.caller_key).toBe("ip:2001:db8:77:1::/64");
    const ip = address();
    const mapped = await jsonOf<OverrideBody>(await adminCall("PUT", `/overrides/ip:::ffff:${ip}`, CONFIG, { body: { limits: LIMITS } }), 201);
    expect(mapped.caller_key).toBe(`ip:${ip}`);
  });

  it("refuses malformed jwt: keys and every tenant: override, naming caller_key", async () => {
    for (const bad of [`jwt:${jwtDigest().toUpperCase()}`, `jwt:${jwtDigest().slice(1)}`, `jwt:${jwtDigest()}0`, "jwt:", "net:10.0.0.0/8", "ip: 10.0.0.1"]) {
      await expectInvalid(await adminCall("PUT", `/overrides/${encodeURIComponent(bad)}`, CONFIG, { body: { limits: {} } }), "caller_key");
    }
    const tenant = unique("ovt");
    await createTenant(CONFIG, tenant);
    const refused = await expectInvalid(await adminCall("PUT", `/overrides/tenant:${tenant}`, CONFIG, { body: { limits: {} } }), "caller_key");
    expect(String(refused.detail)).toContain("PUT /tenants/{tenant}/limits");
  });
});

describe("listing overrides", () => {
  it("pages in caller-key order with next_cursor, each override once", async () => {
    const prefix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
    const keys = Array.from({ length: 5 }, (_, i) => `jwt:${prefix}${String(i).padStart(52, "0")}`);
    for (const key of [...keys].reverse()) await jsonOf(await adminCall("PUT", `/overrides/${key}`, CONFIG, { body: { limits: LIMITS } }), 201);
    const seen: string[] = [];
    let cursor: string | null = `jwt:${prefix}`;
    let pages = 0;
    while (cursor !== null && pages < 10) {
      const page: { overrides: OverrideBody[]; next_cursor: string | null } = await jsonOf(await adminCall("GET", `/overrides?limit=2&cursor=${encodeURIComponent(cursor)}`, CONFIG), 200);
      expect(page.overrides.length).toBeLessThanOrEqual(2);
      const mine = page.overrides.map((o) => o.caller_key).filter((k) => k.startsWith(`jwt:${prefix}`));
      seen.push(...mine);
      pages += 1;
      cursor = mine.length === page.overrides.length ? page.next_cursor : null;
    }
    expect(seen).toEqual(keys);
  });

  it("refuses a bad limit or an unknown parameter", async () => {
    await expectInvalid(await adminCall("GET", "/overrides?limit=0", CONFIG), "limit");
    await expectInvalid(await adminCall("GET", "/overrides?limit=201", CONFIG), "limit");
    await expectInvalid(await adminCall("GET", "/overrides?page=2", CONFIG), "page");
  });
});

describe("audit subjects of overrides", () => {
  it("stores ip: and jwt: callers as keyed digests and key: callers as they are; no address reaches the log", async () => {
    const ip = address();
    const ipKey = `ip:${ip}`;
    const jwt = `jwt:${jwtDigest()}`;
    const tenant = unique("ova");
    await createTenant(CONFIG, tenant);
    const minted = await mintKey(CONFIG, tenant);
    for (const key of [ipKey, jwt, `key:${minted.id}`]) {
      await jsonOf(await adminCall("PUT", `/overrides/${key}`, CONFIG, { body: { limits: LIMITS, reason: "audit test" } }), 201);
      await jsonOf(await adminCall("DELETE", `/overrides/${key}`, CONFIG), 200);
    }
    for (const key of [ipKey, jwt]) {
      const events = await eventsFor(key);
      expect(events.map((e) => e.kind)).toEqual(["override_deleted", "override_set"]);
      const subject = await expectedSubject(key);
      expect(subject).toMatch(/^hmac:[0-9a-f]{64}$/);
      expect(events.every((e) => e.subject === subject)).toBe(true);
      expect(events[1]?.detail).toMatchObject({ limits: LIMITS, reason: "audit test", expires_at: null });
    }
    // Digests differ per caller and per kind of caller key.
    expect(await expectedSubject(ipKey)).not.toBe(await expectedSubject(`ip:${address()}`));
    const keyEvents = await eventsFor(`key:${minted.id}`);
    expect(keyEvents.map((e) => [e.kind, e.subject])).toEqual([
      ["override_deleted", `key:${minted.id}`],
      ["override_set", `key:${minted.id}`],
      ["key_minted", minted.id],
    ]);
    const all = await jsonOf<{ events: AuditEvent[] }>(await adminCall("GET", "/audit?limit=200", CONFIG), 200);
    expect(JSON.stringify(all.events)).not.toContain(ip);
    expect(JSON.stringify(all.events)).not.toContain(jwt.slice(4));
  });

  it("finds an IPv6 caller's events by any address in its /64", async () => {
    await jsonOf(await adminCall("PUT", "/overrides/ip:2001:db8:5:6::/64", CONFIG, { body: { limits: LIMITS } }), 201);
    expect((await eventsFor("ip:2001:db8:5:6:ffff::1")).map((e) => e.kind)).toEqual(["override_set"]);
    await expectInvalid(await adminCall("GET", "/audit?caller=user:1", CONFIG), "caller");
  });
});

describe("the auditor token and overrides", () => {
  it("reads overrides but cannot set or delete one", async () => {
    const callerKey = `ip:${address()}`;
    await jsonOf(await adminCall("PUT", `/overrides/${callerKey}`, CONFIG, { body: { limits: LIMITS } }), 201);
    await jsonOf(await adminCall("GET", "/overrides", CONFIG, { token: AUDITOR_TOKEN }), 200);
    await jsonOf(await adminCall("GET", `/overrides/${callerKey}`, CONFIG, { token: AUDITOR_TOKEN }), 200);
    for (const method of ["PUT", "DELETE"]) {
      const refused = await adminCall(method, `/overrides/${callerKey}`, CONFIG, { token: AUDITOR_TOKEN, body: { limits: {} } });
      expect(refused.status).toBe(403);
      expect((await problemOf(refused)).code).toBe("admin_forbidden");
    }
    expect(await jsonOf<OverrideBody>(await adminCall("GET", `/overrides/${callerKey}`, CONFIG), 200)).toMatchObject({ limits: LIMITS });
  });
});
