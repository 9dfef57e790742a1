// WebSocket streams through the gateway (issue 14): real
// WebSockets end to end — the test holds the client's end of the gateway's
// 101 answer, the recording origin (scripts/origin-ws.mjs) is a real
// WebSocket server in Node. Messages both ways, close codes both ways, the
// origin's refusal, the forward's header and path rules, every way a stream
// ends giving its slot back, and the stream's log line.
import { runInDurableObject, SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { callGateway, clockedGateway, eventually, gatewayRequest, problemOf, runtimeOf, unique, uniqueIp } from "../helpers";
import { createTenant, mintKey, testConfig } from "./admin-helpers";
import { bytesOf, clientOf, originClose, originStream, upgradeRequest } from "./streams-helpers";

const BIG = [{ count: 1_000_000, window_s: 1 }];
const CONFIG = testConfig({ categories: { admin: { limits: { admin: BIG } } } });
/** The config SELF's requests run with: wrangler.toml's TOLLGATE. */
const SELF_CONFIG = (env as unknown as { TOLLGATE: unknown }).TOLLGATE;

afterEach(() => {
  vi.restoreAllMocks();
});

async function keyCaller(): Promise<{ tenant: string; key: string; id: string }> {
  const tenant = unique("streams");
  await createTenant(CONFIG, tenant);
  const minted = await mintKey(CONFIG, tenant);
  return { tenant, key: minted.key, id: minted.id };
}

describe("a proxied stream", () => {
  it("passes text and binary messages both ways unchanged", async () => {
    const gw = clockedGateway(CONFIG);
    const tag = unique("echo");
    const client = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip: uniqueIp(), tag })));
    client.send("hello ✓ gateway");
    client.send(new Uint8Array([0, 1, 127, 128, 255]));
    client.send("__push:3");
    const got = await client.received(5);
    expect(got[0]).toBe("hello ✓ gateway");
    expect(bytesOf(got[1]!)).toEqual([0, 1, 127, 128, 255]);
    expect(got.slice(2)).toEqual(["push 0", "push 1", "push 2"]);
    const seen = await originStream(tag);
    expect(seen.messages).toEqual([{ text: "hello ✓ gateway" }, { binary_bytes: 5 }, { text: "__push:3" }]);
    client.socket.close(1000, "done");
    await client.closing();
  });

  it("forwards the upgrade under the HTTP forward's header and path rules", async () => {
    const { tenant, key, id } = await keyCaller();
    const gw = clockedGateway(CONFIG, { ORIGIN_URL: `${env.ORIGIN_URL}/base` });
    const tag = unique("headers");
    const ip = uniqueIp();
    const response = await gw.call(
      upgradeRequest("//__origin//ws/?room=7", {
        ip,
        tag,
        headers: {
          authorization: `Bearer ${key}`,
          connection: "Upgrade, x-hop",
          "x-hop": "dropped",
          "keep-alive": "timeout=5",
          "x-forwarded-for": "203.0.113.66",
          "x-real-ip": "203.0.113.66",
          forwarded: "for=203.0.113.66",
          "x-tollgate-tenant": "someone-else",
          "x-tollgate-key-id": "forged",
          "sec-websocket-protocol": "chat.v1, chat.v0",
          "sec-websocket-extensions": "permessage-deflate",
          "x-end-to-end": "kept",
        },
      }),
    );
    // The subprotocol the origin chose reaches the client.
    expect(response.headers.get("sec-websocket-protocol")).toBe("chat.v1");
    const client = clientOf(response);
    const seen = await originStream(tag);
    expect(seen.path).toBe("/base/__origin/ws/");
    expect(seen.query).toBe("?room=7");
    expect(seen.headers).toMatchObject({
      upgrade: "websocket",
      "x-forwarded-for": ip,
      "x-real-ip": ip,
      "x-tollgate-tenant": tenant,
      "x-tollgate-key-id": id,
      "sec-websocket-protocol": "chat.v1, chat.v0",
      "x-end-to-end": "kept",
      authorization: `Bearer ${key}`,
    });
    for (const name of ["x-hop", "keep-alive", "forwarded", "sec-websocket-extensions"]) expect(seen.headers[name], name).toBeUndefined();
    client.socket.close(1000, "done");
    await client.closing();
  });

  it("passes the client's close code and reason to the origin, and gives the slot back", async () => {
    const gw = clockedGateway(CONFIG);
    const tag = unique("client-close");
    const ip = uniqueIp();
    const client = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip, tag })));
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(1);
    client.socket.close(4001, "leaving now");
    expect(await originClose(tag)).toEqual({ code: 4001, reason: "leaving now", by: "peer" });
    expect(await client.closing()).toMatchObject({ code: 4001, reason: "leaving now" });
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(0);
    expect(gw.runtime.streams.total).toBe(0);
  });

  it("passes the origin's close code and reason to the client, and gives the slot back", async () => {
    const gw = clockedGateway(CONFIG);
    const tag = unique("origin-close");
    const ip = uniqueIp();
    const client = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip, tag })));
    client.send("__close:4002:origin is done");
    expect(await client.closing()).toEqual({ code: 4002, reason: "origin is done", wasClean: true });
    await eventually(() => gw.runtime.streams.countOf(`ip:${ip}`) === 0, "the slot is given back");
  });

  it("closes the client with 1001 when the origin drops the connection", async () => {
    const gw = clockedGateway(CONFIG);
    const ip = uniqueIp();
    const client = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip, tag: unique("drop") })));
    client.send("__drop");
    expect(await client.closing()).toMatchObject({ code: 1001, reason: "origin went away" });
    await eventually(() => gw.runtime.streams.countOf(`ip:${ip}`) === 0, "the slot is given back");
  });

  it("closes the origin with 1001 when the client vanishes without a close frame", async () => {
    const runtime = runtimeOf(SELF_CONFIG);
    const tag = unique("vanish");
    const ip = uniqueIp();
    // The client lives in a Durable Object's context; aborting the object
    // tears its connection down with no close frame, as a dropped client would.
    const holder = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(unique("client-holder")));
    const aborted = runInDurableObject(holder, async (_object, state) => {
      const client = clientOf(await SELF.fetch(upgradeRequest("/__origin/ws", { ip, tag })));
      client.send("are you there");
      await client.received(1);
      expect(runtime.streams.countOf(`ip:${ip}`)).toBe(1);
      state.abort("the client vanishes");
    });
    await expect(aborted).rejects.toThrow("the client vanishes");
    expect(await originClose(tag)).toEqual({ code: 1001, reason: "client went away", by: "peer" });
    await eventually(() => runtime.streams.countOf(`ip:${ip}`) === 0, "the slot is given back");
  });

  it("passes an origin's refusal of the upgrade back whole, holding no slot", async () => {
    const gw = clockedGateway(CONFIG);
    const ip = uniqueIp();
    const response = await gw.call(upgradeRequest("/__origin/ws", { ip, tag: unique("refused"), headers: { "x-origin-ws-refuse": "403" } }));
    expect(response.status).toBe(403);
    expect(response.webSocket).toBeNull();
    expect(response.headers.get("x-origin-seen")).toBe("1");
    expect(await response.json()).toEqual({ refused: true, status: 403 });
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(0);
  });

  it("answers 502 origin_unreachable when the origin cannot be reached, holding no slot", async () => {
    const gw = clockedGateway(CONFIG, { ORIGIN_URL: "http://127.0.0.1:9" });
    const ip = uniqueIp();
    const response = await gw.call(upgradeRequest("/__origin/ws", { ip, tag: unique("unreachable") }));
    expect(response.status).toBe(502);
    expect((await problemOf(response)).code).toBe("origin_unreachable");
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(0);
  });

  it("is a real WebSocket through the Worker's own entry point", async () => {
    const tag = unique("self");
    const client = clientOf(await SELF.fetch(upgradeRequest("/__origin/ws", { ip: uniqueIp(), tag })));
    client.send("through SELF");
    expect(await client.received(1)).toEqual(["through SELF"]);
    client.socket.close(3001, "bye");
    expect(await originClose(tag)).toMatchObject({ code: 3001, reason: "bye" });
  });

  it("holds no in-flight slot: the caller's requests still pass with streams open", async () => {
    const config = { ...CONFIG, in_flight: { per_credential: 1 } };
    const gw = clockedGateway(config);
    const ip = uniqueIp();
    const clients = [];
    for (let i = 0; i < 3; i++) clients.push(clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip, tag: unique("no-in-flight") }))));
    expect(gw.runtime.inFlight.countOf(`ip:${ip}`)).toBe(0);
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(3);
    const plain = await gw.call(gatewayRequest("/plain", { ip }), { settle: true });
    expect(plain.status).toBe(200);
    for (const client of clients) client.socket.close(1000, "done");
    await eventually(() => gw.runtime.streams.countOf(`ip:${ip}`) === 0, "every slot is given back");
  });

  it("writes one log line when the stream ends: duration, messages each way, close code, never contents", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    const { tenant, key, id } = await keyCaller();
    const gw = clockedGateway({ ...CONFIG, request_log: true });
    const path = `/__origin/ws/${unique("logged")}`;
    const client = clientOf(await gw.call(upgradeRequest(path, { ip: uniqueIp(), tag: unique("log"), headers: { authorization: `Bearer ${key}` } })));
    client.send("secret-message-contents");
    client.send("__push:2");
    // The echo of the first, then the two pushes (a control message is not echoed).
    await client.received(3);
    gw.clock.nowMs += 1500;
    client.socket.close(4003, "secret-close-reason");
    await client.closing();
    const streamLines = lines.filter((l) => l.includes('"event":"stream"') && l.includes(path)).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(streamLines).toHaveLength(1);
    expect(streamLines[0]).toMatchObject({
      level: "info",
      tenant,
      key_id: id,
      method: "GET",
      path,
      status: 101,
      decision: "admitted",
      duration_ms: 1500,
      messages_in: 2,
      messages_out: 3,
      close_code: 4003,
      ended_by: "client_closed",
      rent_periods: 1,
    });
    const all = lines.join("\n");
    for (const secret of ["secret-message-contents", "secret-close-reason", key]) expect(all).not.toContain(secret);
    // The open itself writes no request line: the stream's line is its one line.
    expect(lines.filter((l) => l.includes('"event":"request"') && l.includes(path))).toHaveLength(0);
  });
});
