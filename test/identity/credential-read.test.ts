import { describe, expect, it } from "vitest";
import { readCredentials } from "../../src/identity/api-key";
import { credentialOf } from "../../src/identity/caller-id";
import { exchangeFor, runtimeOf } from "../helpers";

const KEY = "tg_0123456789ab_0123456789abcdefghjkmnpqrstvwxyz";

describe("the request's credential, read once", () => {
  it("takes a Bearer token first, else X-Api-Key trimmed, and names two that differ", () => {
    const read = (headers: Record<string, string>) => readCredentials(new Headers(headers));
    expect(read({})).toEqual({ credential: null, conflicting: false });
    expect(read({ authorization: `Bearer ${KEY}` })).toEqual({ credential: KEY, conflicting: false });
    expect(read({ "x-api-key": ` ${KEY} ` })).toEqual({ credential: KEY, conflicting: false });
    // Basic auth is the origin's business: no credential of the gateway's.
    expect(read({ authorization: "Basic dXNlcjpwYXNz" })).toEqual({ credential: null, conflicting: false });
    expect(read({ authorization: "Basic dXNlcjpwYXNz", "x-api-key": KEY })).toEqual({ credential: KEY, conflicting: false });
    expect(read({ authorization: `Bearer ${KEY}`, "x-api-key": ` ${KEY}` })).toEqual({ credential: KEY, conflicting: false });
    expect(read({ authorization: `Bearer ${KEY}`, "x-api-key": `${KEY}x` })).toEqual({ credential: KEY, conflicting: true });
  });

  it("reads the two headers once per request, however many steps and outputs ask", () => {
    const runtime = runtimeOf({ anonymous: "allow" });
    const request = new Request("https://gw.example/items", { headers: { authorization: `Bearer ${KEY}`, "x-api-key": "another" } });
    const reads: string[] = [];
    const headers = request.headers;
    const get = headers.get.bind(headers);
    Object.defineProperty(headers, "get", { value: (name: string) => (reads.push(name.toLowerCase()), get(name)) });
    const x = exchangeFor(runtime, request);
    reads.length = 0;
    expect(credentialOf(x)).toBe(KEY);
    expect(x.credentialConflict).toBe(true);
    expect(credentialOf(x)).toBe(KEY);
    expect(credentialOf(x)).toBe(KEY);
    expect(reads.sort()).toEqual(["authorization", "x-api-key"]);
  });
});
