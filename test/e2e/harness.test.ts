// The e2e harness itself: the gateway under wrangler dev is healthy, takes
// the run's admin and auditor tokens, and forwards to the recording origin;
// one started with an invalid config answers health 503 and says why in
// wrangler's terminal.
import { describe, expect, it } from "vitest";
import { adminCall, gateway, unique } from "./fixture";
import { startGateway } from "./gateway";

describe("a gateway whose config is invalid", () => {
  it("answers health 503 config_invalid, and wrangler's terminal shows one line naming the field", async () => {
    const refused = await startGateway({ tollgate: { max_request_bytes: -1 } }).then(
      async (gw) => {
        await gw.stop();
        return null;
      },
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    expect(refused).toContain('The gateway\'s TOLLGATE config is invalid: {"field":"max_request_bytes","message":"must be >= 0"}');
    const logged = (refused ?? "").split("\n").filter((line) => line.includes('"event":"config_invalid"'));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain('"field":"max_request_bytes"');
  }, 300_000); // a start slot's wait (./start-slots.ts) and the start's own 120 s
});

describe("the e2e gateway", () => {
  it("answers health with status ok", async () => {
    const res = await fetch(`${gateway().gatewayUrl}/_tollgate/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok" });
  });

  it("accepts the admin token for writes and the auditor token for reads only", async () => {
    const { gatewayUrl, auditorToken } = gateway();
    const tenant = unique("harness");
    expect((await adminCall("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const asAuditor = (method: string) =>
      fetch(`${gatewayUrl}/_tollgate/admin/v1/tenants/${tenant}`, { method, headers: { authorization: `Bearer ${auditorToken}` } });
    expect((await asAuditor("GET")).status).toBe(200);
    const refused = await asAuditor("DELETE");
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: "admin_forbidden" });
  });

  it("forwards an admitted request to the recording origin", async () => {
    const { gatewayUrl, originUrl } = gateway();
    const tag = unique("fwd");
    const res = await fetch(`${gatewayUrl}/hello?x=1`, { headers: { "x-test-tag": tag } });
    expect(res.status).toBe(200);
    const seen = (await (await fetch(`${originUrl}/__origin/requests?tag=${tag}`)).json()) as Array<{ path: string; query: string }>;
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ path: "/hello", query: "?x=1" });
  });
});
