// "A client that hangs up" (issue 10 item 8). In production the
// Workers runtime stops running a request's code once its client disconnects
// and cancels the I/O it started, unless something keeps the request's
// context alive. These tests call the Worker through SELF (a real incoming
// request in workerd) and abort it from the client side while the origin is
// still working: the settlement must still commit the upload the origin
// stored and give the in-flight slot back.
import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eventually, originLog, runtimeOf, unique } from "../helpers";
import { testConfig, tenantWithKey as newTenantWithKey } from "./admin-helpers";

const ADMIN = testConfig();
/** The config SELF's requests run with: wrangler.toml's TOLLGATE (PUT /objects/:object stores, DELETE releases). */
const SELF_CONFIG = (env as unknown as { TOLLGATE: unknown }).TOLLGATE;

const tenantWithKey = (quota: Record<string, unknown> = {}) => newTenantWithKey(ADMIN, { quota }, "hangup");

function usageOf(tenant: string) {
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)).usage();
}

/** Sends a request through SELF and aborts it once `when` resolves (or at once if it rejects). */
async function hangUp(path: string, init: RequestInit, when: Promise<unknown>): Promise<void> {
  const controller = new AbortController();
  const pending = SELF.fetch(`http://gateway.test${path}`, { ...init, signal: controller.signal });
  void when.finally(() => controller.abort());
  await pending.then(
    (res) => res.body?.cancel(),
    () => undefined,
  );
}

/** Resolves once the recording origin has the whole request tagged `tag` (it answers only after its delay). */
function originHas(tag: string): Promise<void> {
  return eventually(async () => (await originLog(tag)).length === 1, "the origin received the request", 20_000);
}

describe("a client that hangs up", () => {
  it("still commits an upload the origin stored after the client went away", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 10_000 } });
    const tag = unique("gone");
    // The client goes once the origin holds the whole body, while it takes 2 s to answer 200.
    await hangUp(
      "/objects/kept.bin",
      { method: "PUT", headers: { authorization: `Bearer ${key}`, "content-length": "100", "x-origin-delay-ms": "2000", "x-test-tag": tag, "cf-connecting-ip": "198.51.100.90" }, body: new Uint8Array(100) },
      originHas(tag),
    );
    expect((await originLog(tag))[0]!.body_bytes).toBe(100);
    await eventually(async () => (await usageOf(tenant)).bytes === 100, "the upload is committed", 20_000);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 100, objects: 1, reserved_bytes: 0, reservations: 0 });
  });

  it("releases the reservation of an upload the origin refused after the client went away", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 10_000 } });
    const tag = unique("refused");
    await hangUp(
      "/objects/refused.bin",
      { method: "PUT", headers: { authorization: `Bearer ${key}`, "content-length": "100", "x-origin-delay-ms": "2000", "x-origin-status": "500", "x-test-tag": tag, "cf-connecting-ip": "198.51.100.91" }, body: new Uint8Array(100) },
      originHas(tag),
    );
    await eventually(async () => (await usageOf(tenant)).reservations === 0, "the reservation is released", 20_000);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 0, objects: 0, reserved_bytes: 0 });
  });

  it("gives the in-flight slot back when the client goes before the origin answers", async () => {
    const { key, id } = await tenantWithKey();
    const slots = () => runtimeOf(SELF_CONFIG).inFlight.countOf(`key:${id}`);
    const tag = unique("slow");
    const arrived = eventually(async () => (await originLog(tag)).length === 5, "the origin has all five", 20_000);
    await Promise.all(
      Array.from({ length: 5 }, () => hangUp("/slow", { headers: { authorization: `Bearer ${key}`, "x-origin-delay-ms": "2000", "x-test-tag": tag, "cf-connecting-ip": "198.51.100.92" } }, arrived)),
    );
    await eventually(() => slots() === 0, "every slot is back", 20_000);
  });

  it("gives the in-flight slot back when the client goes mid-body", async () => {
    const { key, id } = await tenantWithKey();
    const slots = () => runtimeOf(SELF_CONFIG).inFlight.countOf(`key:${id}`);
    const controller = new AbortController();
    const res = await SELF.fetch("http://gateway.test/big", {
      headers: { authorization: `Bearer ${key}`, "x-origin-body-bytes": String(16 * 1024 * 1024), "cf-connecting-ip": "198.51.100.93" },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    expect(slots()).toBe(1);
    controller.abort();
    await eventually(() => slots() === 0, "the slot is back", 20_000);
  });
});
