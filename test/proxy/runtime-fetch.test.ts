// What the runtime's own fetch sends, whatever the request holds: the
// forward (src/proxy/forward.ts) leaves to a fetch over the network the
// connection-level names it drops itself (DROPPED_BY_NETWORK_FETCH), and
// deletes every hop-by-hop name for a service binding, which passes them
// on. If a runtime update changes either, these fail before the contract
// does (test/integration/forwarding.test.ts and origins.test.ts check the
// gateway's end of it).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { HOP_BY_HOP } from "../../src/proxy/hop-by-hop";
import { DROPPED_BY_NETWORK_FETCH } from "../../src/proxy/forward";
import { type OriginSeen } from "../helpers";

const SENT: Record<string, string> = {
  connection: "x-private-hop",
  "x-private-hop": "secret",
  "keep-alive": "timeout=5",
  te: "trailers",
  trailer: "x-later",
  upgrade: "h2c",
  "proxy-authorization": "Basic Zm9vOmJhcg==",
  "proxy-authenticate": "Basic",
  "proxy-connection": "keep-alive",
  "cf-connecting-ip": "203.0.113.7",
  "x-kept": "yes",
};

describe("the runtime's fetch", () => {
  it("over the network, sends none of the connection-level names it was given, nor CF-Connecting-IP, and every other hop-by-hop name", async () => {
    const res = await fetch(`${env.ORIGIN_URL}/runtime-fetch`, { headers: SENT });
    const names = ((await res.json()) as OriginSeen).raw_header_names;
    for (const name of DROPPED_BY_NETWORK_FETCH) expect(names, name).not.toContain(name);
    expect(names).not.toContain("cf-connecting-ip");
    // The rest of the hop-by-hop names, and what Connection lists, arrive: the forward deletes those itself.
    for (const name of HOP_BY_HOP) if (!DROPPED_BY_NETWORK_FETCH.has(name)) expect(names, name).toContain(name);
    expect(names).toContain("x-private-hop");
    expect(names).toContain("x-kept");
  });

  it("over the network, sends its own framing for a body, never the Transfer-Encoding it was given", async () => {
    const res = await fetch(`${env.ORIGIN_URL}/runtime-fetch`, { method: "POST", headers: { "transfer-encoding": "gzip, chunked", "content-type": "text/plain" }, body: "abc" });
    const seen = (await res.json()) as OriginSeen;
    expect(seen.raw_header_names).not.toContain("transfer-encoding");
    expect(seen.body_bytes).toBe(3);
  });

  it("through a service binding, passes every header on, hop-by-hop ones included", async () => {
    const service = (env as unknown as Record<string, Fetcher>).SERVICE_ORIGIN!;
    const res = await service.fetch(new Request("https://gateway.test/runtime-fetch", { headers: SENT }));
    const names = Object.keys(((await res.json()) as { headers: Record<string, string> }).headers);
    for (const name of Object.keys(SENT)) expect(names, name).toContain(name);
  });
});
