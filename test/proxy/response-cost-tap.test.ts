import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { compileJsonPath } from "../../src/proxy/json-path";
import { bodyFormatOf, costFromHeader, MAX_JSON_INSPECT_BYTES, priceResponse, tapCost } from "../../src/proxy/response-cost";
import { MAX_RESPONSE_COST } from "../../src/proxy/response-cost-result";
import { parseResponseCharge, type ResponseCharge } from "../../src/proxy/response-cost-spec";
import { eventually, originLog, sha256Hex, unique } from "../helpers";
import { bytes, concat, fakeOrigin, openAiStream, readChunks, splitAt } from "./streams";

const PATH = compileJsonPath("usage.total_tokens");
const SSE = "text/event-stream";
const JSON_TYPE = "application/json";

/** Chunks of pseudo-random sizes (1 byte to 64 KiB), the same for a given seed. */
function randomPieces(whole: Uint8Array, seed: number): Uint8Array[] {
  const cuts: number[] = [];
  let x = seed;
  for (let at = 0; at < whole.length; ) {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    at += 1 + (x % (x & 1 ? 64 : 65_536));
    cuts.push(at);
  }
  return splitAt(whole, cuts);
}

function charge(raw: unknown): ResponseCharge {
  const parsed = parseResponseCharge(raw);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.charge;
}

describe("tapCost passes the body through", () => {
  it("passes every chunk on unchanged, in order, and settles the cost at the end", async () => {
    const pieces = randomPieces(bytes(openAiStream(300, 4242)), 7);
    const origin = fakeOrigin(pieces);
    const tapped = tapCost(origin.stream, PATH, SSE);
    const seen = await readChunks(tapped.body!);
    expect(seen).toEqual(pieces);
    expect(await tapped.cost).toEqual({ found: true, cost: 4242 });
  });

  it("reads a byte stream's branch into its own buffer, many chunks at a time", async () => {
    const whole = bytes(openAiStream(2000, 777));
    const pieces = randomPieces(whole, 5);
    const tapped = tapCost(fakeOrigin(pieces, { byteStream: true }).stream, PATH, SSE);
    expect(concat(await readChunks(tapped.body!))).toEqual(whole);
    expect(await tapped.cost).toEqual({ found: true, cost: 777 });
  });

  it("delivers a multi-megabyte SSE body byte for byte through a Response", async () => {
    const whole = bytes(openAiStream(20_000, 31_337, { content: (i) => `tok ${i} é😀 \\"q\\" \n` }));
    expect(whole.length).toBeGreaterThan(4_000_000);
    const tapped = tapCost(fakeOrigin(randomPieces(whole, 11)).stream, PATH, "text/event-stream; charset=utf-8");
    const received = new Uint8Array(await new Response(tapped.body).arrayBuffer());
    expect(received.length).toBe(whole.length);
    expect(await sha256Hex(received)).toBe(await sha256Hex(whole));
    expect(await tapped.cost).toEqual({ found: true, cost: 31_337 });
  });

  it("reads a JSON body's cost, and gives up past 1 MiB while the body goes on whole", async () => {
    const small = bytes('{"id":"c","usage":{"prompt_tokens":3,"total_tokens":58}}');
    const tappedSmall = tapCost(fakeOrigin(splitAt(small, [5, 30])).stream, PATH, "application/json; charset=utf-8");
    expect(concat(await readChunks(tappedSmall.body!))).toEqual(small);
    expect(await tappedSmall.cost).toEqual({ found: true, cost: 58 });

    // An origin that never ends: the cost settles at the bound all the same, and the body goes on.
    const big = bytes(`{"padding":"${"x".repeat(MAX_JSON_INSPECT_BYTES)}","usage":{"total_tokens":58}}`);
    const pieces = randomPieces(big, 3);
    const origin = fakeOrigin(pieces, { stallAfter: pieces.length });
    const tapped = tapCost(origin.stream, PATH, JSON_TYPE);
    expect(await tapped.cost).toEqual({ found: false, reason: "too_large" });
    const reader = tapped.body!.getReader();
    const received: Uint8Array[] = [];
    while (received.length < pieces.length) received.push((await reader.read()).value!);
    expect(await sha256Hex(concat(received))).toBe(await sha256Hex(big));
    await reader.cancel();
    expect(origin.cancelled()).toBe(true);
  });

  it("with drain, reads on past a cost fixed early and marks the body's end, not the cost's", async () => {
    // A JSON body past 1 MiB: the cost is fixed (too_large) at the bound; ended waits for the origin's last byte.
    const big = bytes(`{"padding":"${"x".repeat(MAX_JSON_INSPECT_BYTES)}","usage":{"total_tokens":58}}`);
    const pieces = randomPieces(big, 5);
    const origin = fakeOrigin(pieces, { stallAfter: pieces.length });
    const tapped = tapCost(origin.stream, PATH, JSON_TYPE, { drain: true });
    let ended = false;
    void tapped.ended!.then(() => (ended = true));
    const clientBytes = readChunks(tapped.body!);
    expect(await tapped.cost).toEqual({ found: false, reason: "too_large" });
    // The origin has sent every piece and stalls before its end: the body has not ended, and its branch was not cancelled.
    await eventually(() => origin.served() === pieces.length, "the tap reads on to the origin's last piece");
    expect(ended).toBe(false);
    expect(origin.cancelled()).toBe(false);
    // A body that ends: ended resolves at its end, and the client has every byte.
    const whole = fakeOrigin(pieces);
    const drained = tapCost(whole.stream, PATH, JSON_TYPE, { drain: true });
    expect(await sha256Hex(concat(await readChunks(drained.body!)))).toBe(await sha256Hex(big));
    await drained.ended;
    expect(whole.served()).toBe(pieces.length);
    expect(await drained.cost).toEqual({ found: false, reason: "too_large" });
    void clientBytes.catch(() => {});
    await tapped.body!.cancel().catch(() => {});
  });

  it("without drain, has no end to report", () => {
    expect(tapCost(fakeOrigin([bytes("{}")]).stream, PATH, JSON_TYPE).ended).toBeNull();
    expect(tapCost(fakeOrigin([bytes("x")]).stream, PATH, "text/plain", { drain: true }).ended).toBeNull();
  });

  it("settles malformed JSON at once, while the origin is still sending", async () => {
    const origin = fakeOrigin([bytes('{"usage":{"total_tokens":5,,'), bytes("x".repeat(100))], { stallAfter: 2 });
    const tapped = tapCost(origin.stream, PATH, JSON_TYPE);
    expect(await tapped.cost).toEqual({ found: false, reason: "malformed" });
    expect(origin.cancelled()).toBe(false);
    await tapped.body!.cancel();
    expect(origin.cancelled()).toBe(true);
  });

  it("leaves other bodies untouched, with no cost", async () => {
    const origin = fakeOrigin([bytes('{"usage":{"total_tokens":5}}')]);
    const tapped = tapCost(origin.stream, PATH, "text/plain");
    expect(tapped.body).toBe(origin.stream);
    expect(await tapped.cost).toEqual({ found: false, reason: "absent" });
    expect(tapCost(null, PATH, JSON_TYPE).body).toBeNull();
    expect(await tapCost(null, PATH, JSON_TYPE).cost).toEqual({ found: false, reason: "absent" });
  });

  it.each([
    ["application/json", "json"],
    ["Application/JSON; charset=UTF-8", "json"],
    ["application/vnd.api+json", "json"],
    ["application/problem+json; x=1", "json"],
    ["text/event-stream", "sse"],
    [" text/event-stream ;charset=utf-8", "sse"],
    ["text/plain", null],
    ["application/jsonl", null],
    ["+json", null],
    ["application/+json", null],
    [null, null],
  ])("reads %j as %s", (contentType, format) => {
    expect(bodyFormatOf(contentType)).toBe(format);
  });
});

describe("tapCost when the client hangs up", () => {
  it("keeps reading the origin after the client cancels and settles from its whole answer", async () => {
    const pieces = splitAt(bytes(openAiStream(50, 900)), [100, 200, 300, 5000, 9000]);
    const origin = fakeOrigin(pieces);
    const tapped = tapCost(origin.stream, PATH, SSE);
    const reader = tapped.body!.getReader();
    await reader.read();
    await reader.cancel("client went away");
    expect(await tapped.cost).toEqual({ found: true, cost: 900 });
    expect(origin.served()).toBe(pieces.length);
    expect(origin.cancelled()).toBe(false);
  });

  it("reads a JSON body on after a cancel too, even one nobody read", async () => {
    const origin = fakeOrigin(splitAt(bytes('{"a":"x","usage":{"total_tokens":64}}'), [3, 10, 20]));
    const tapped = tapCost(origin.stream, PATH, JSON_TYPE);
    await tapped.body!.cancel();
    expect(await tapped.cost).toEqual({ found: true, cost: 64 });
  });

  it("stops reading when `stop` aborts, even while the origin says nothing, and settles from what was seen", async () => {
    const origin = fakeOrigin([bytes('data: {"usage":{"total_tokens":10}}\n\ndata: {"usage":{"total_tokens":20}}\n\n')], { stallAfter: 1 });
    const stop = new AbortController();
    const tapped = tapCost(origin.stream, PATH, SSE, { stop: stop.signal });
    const reader = tapped.body!.getReader();
    await reader.read();
    await reader.cancel();
    // Not a timing check: only that nothing settles the cost while the origin is silent.
    const early = await Promise.race([tapped.cost.then(() => "settled"), new Promise((resolve) => setTimeout(resolve, 20, "pending"))]);
    expect(early).toBe("pending");
    stop.abort();
    expect(await tapped.cost).toEqual({ found: true, cost: 20 });
    expect(origin.cancelled()).toBe(true);

    const quiet = fakeOrigin([bytes(openAiStream(2, null))], { stallAfter: 1 });
    const tappedQuiet = tapCost(quiet.stream, PATH, SSE, { stop: AbortSignal.abort() });
    expect(await tappedQuiet.cost).toEqual({ found: false, reason: "aborted" });
    // The client's branch is not touched by `stop`.
    expect(new TextDecoder().decode((await tappedQuiet.body!.getReader().read()).value)).toBe(openAiStream(2, null));
  });
});

describe("tapCost when the origin fails", () => {
  it("errors the client's body as the origin did, and settles with what was seen", async () => {
    const sse = fakeOrigin([bytes('data: {"usage":{"total_tokens":8}}\n\n'), bytes("data: {")], { failAfter: 2 });
    const tappedSse = tapCost(sse.stream, PATH, SSE);
    await expect(readChunks(tappedSse.body!)).rejects.toThrow("origin reset");
    expect(await tappedSse.cost).toEqual({ found: true, cost: 8 });

    const json = fakeOrigin([bytes('{"usage":{"total_tokens":8}')], { failAfter: 1 });
    const tappedJson = tapCost(json.stream, PATH, JSON_TYPE);
    await expect(readChunks(tappedJson.body!)).rejects.toThrow("origin reset");
    expect(await tappedJson.cost).toEqual({ found: false, reason: "aborted" });
  });

  it("settles when the origin fails after the client left", async () => {
    const origin = fakeOrigin([bytes(openAiStream(1, null)), bytes("data: x\n\n")], { failAfter: 2 });
    const tapped = tapCost(origin.stream, PATH, SSE);
    await tapped.body!.cancel();
    expect(await tapped.cost).toEqual({ found: false, reason: "aborted" });
  });
});

describe("costFromHeader and priceResponse", () => {
  it.each([
    ["42", 42],
    [" 42 ", 42],
    ["0", 0],
    ["007", 7],
    [String(MAX_RESPONSE_COST), MAX_RESPONSE_COST],
    [String(MAX_RESPONSE_COST + 1), null],
    ["12345678901", null],
    ["-1", null],
    ["+1", null],
    ["1.5", null],
    ["1e3", null],
    ["0x10", null],
    ["", null],
    ["1, 2", null],
    ["ten", null],
  ])("reads %j as %s", (value, expected) => {
    expect(costFromHeader(new Headers({ "x-usage-total-tokens": value }), "x-usage-total-tokens")).toBe(expected);
  });

  it("knows a header cost before the body is sent", async () => {
    const priced = priceResponse(new Response("hello", { headers: { "X-Usage-Total-Tokens": "321" } }), charge({ category: "tokens", header: "X-Usage-Total-Tokens" }));
    expect(priced.known).toEqual({ found: true, cost: 321 });
    expect(await priced.cost).toEqual({ found: true, cost: 321 });
    expect(await new Response(priced.body).text()).toBe("hello");
    const bad = priceResponse(new Response("x", { headers: { "x-usage-total-tokens": "-5" } }), charge({ category: "tokens", header: "x-usage-total-tokens" }));
    expect(bad.known).toEqual({ found: false, reason: "malformed" });
    const none = priceResponse(new Response("x"), charge({ category: "tokens", header: "x-usage-total-tokens" }));
    expect(none.known).toEqual({ found: false, reason: "absent" });
  });

  it("reads a body cost through the tap", async () => {
    const response = new Response('{"usage":{"total_tokens":12}}', { headers: { "content-type": JSON_TYPE } });
    const priced = priceResponse(response, charge({ category: "tokens", json: "usage.total_tokens", reserve: 50 }));
    expect(priced.known).toBeNull();
    expect(await new Response(priced.body).text()).toBe('{"usage":{"total_tokens":12}}');
    expect(await priced.cost).toEqual({ found: true, cost: 12 });
  });
});

describe("tapCost on the recording origin's answers (workerd streams)", () => {
  const origin = (path: string, headers: Record<string, string>) => fetch(`${env.ORIGIN_URL}${path}`, { headers });

  it("reads an SSE stream's usage and passes every byte on", async () => {
    const headers = { "x-origin-sse-usage": "456", "x-origin-sse-events": "50" };
    const direct = await (await origin("/v1/chat/completions", headers)).text();
    const response = await origin("/v1/chat/completions", headers);
    const tapped = tapCost(response.body, PATH, response.headers.get("content-type"));
    expect(await new Response(tapped.body).text()).toBe(direct);
    expect(await tapped.cost).toEqual({ found: true, cost: 456 });
  });

  it("reads a JSON answer's usage, and none from a stream without it", async () => {
    const json = await origin("/v1/chat/completions", { "x-origin-json-usage": "123" });
    const tapped = tapCost(json.body, PATH, json.headers.get("content-type"));
    await new Response(tapped.body).arrayBuffer();
    expect(await tapped.cost).toEqual({ found: true, cost: 123 });

    const quiet = await origin("/v1/chat/completions", { "x-origin-sse-usage": "none" });
    const tappedQuiet = tapCost(quiet.body, PATH, quiet.headers.get("content-type"));
    await new Response(tappedQuiet.body).arrayBuffer();
    expect(await tappedQuiet.cost).toEqual({ found: false, reason: "absent" });

    const header = await origin("/v1/chat/completions", { "x-origin-usage-header": "789" });
    expect(costFromHeader(header.headers, "x-usage-total-tokens")).toBe(789);
    await header.arrayBuffer();
  });

  it("gives the client each event as the origin sends it, not once the stream has ended", async () => {
    // An LLM stream trickles: the scanner's reads must never make the client
    // wait for more than is there (workerd's readAtLeast on the scanner's
    // branch held the client's branch until 32 KiB or the end had arrived).
    const tag = unique("trickle");
    const response = await origin("/v1/chat/completions", { "x-test-tag": tag, "x-origin-sse-usage": "77", "x-origin-sse-events": "8", "x-origin-sse-interval-ms": "250" });
    const tapped = tapCost(response.body, PATH, response.headers.get("content-type"));
    const reader = tapped.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"content":"token 0 "');
    // The origin has 10 writes to make (8 events, usage, [DONE]), 250 ms apart: it is still sending.
    const seen = (await originLog(tag))[0] as unknown as Record<string, unknown>;
    expect(seen.sse_events_written as number).toBeLessThan(10);
    expect(seen.response_end).toBeUndefined();
    while (!(await reader.read()).done);
    expect(await tapped.cost).toEqual({ found: true, cost: 77 });
  });

  it("after a hang-up mid-stream, reads the origin to its end and settles its usage", async () => {
    const tag = unique("hangup");
    const response = await origin("/v1/chat/completions", { "x-test-tag": tag, "x-origin-sse-usage": "2024", "x-origin-sse-events": "30", "x-origin-sse-interval-ms": "5" });
    const tapped = tapCost(response.body, PATH, response.headers.get("content-type"));
    const reader = tapped.body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(await tapped.cost).toEqual({ found: true, cost: 2024 });
    // The origin records how its answer ended once its socket says so: poll for it.
    const deadline = Date.now() + 5000;
    let seen = (await originLog(tag))[0] as unknown as Record<string, unknown> | undefined;
    while (seen?.response_end === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      seen = (await originLog(tag))[0] as unknown as Record<string, unknown> | undefined;
    }
    expect(seen).toMatchObject({ sse_events_written: 32, response_end: "finished" });
  });
});
