// The RateLimit answers through the gateway: every policy charged, draft-11
// and draft-12 fields checked by an outside RFC 9651 parser, and the 429's
// violated-policies.
import { type Item, parseList } from "structured-headers";
import { describe, expect, it } from "vitest";
import { clockedGateway, gatewayRequest, problemOf, uniqueIp } from "../helpers";

function members(value: string | null): { name: string; params: Record<string, unknown> }[] {
  expect(value).not.toBeNull();
  return parseList(value!).map((member) => {
    const [bare, params] = member as Item;
    return { name: String(bare), params: Object.fromEntries([...params].map(([k, v]) => [k, typeof v === "object" && v !== null ? String(v) : v])) };
  });
}

const limits = {
  request: { limits: { ip: [{ count: 5, window_s: 60 }, { count: 100, window_s: 3600 }, { count: 1000, window_s: 86_400 }], anonymous: [{ count: 50, window_s: 1 }] } },
  upload: { limits: { ip: [{ count: 12, window_s: 60 }, { count: 100, window_s: 3600 }] } },
};
const routes = [{ method: "PUT", path: "/files/:name", charges: { upload: 5 } }];

describe("RateLimit answers through the gateway", () => {
  it("lists every policy of every subject and names the tightest in draft-11 (the default)", async () => {
    const gateway = clockedGateway({ categories: limits, routes });
    const ip = uniqueIp();
    const answer = await gateway.call(gatewayRequest("/files/a", { method: "PUT", body: "x", ip }));
    expect(answer.status).toBe(200);
    expect(members(answer.headers.get("ratelimit-policy")).map((p) => p.name)).toEqual([
      "request-ip-60s",
      "request-ip-3600s",
      "request-ip-86400s",
      "request-anonymous-1s",
      "upload-ip-60s",
      "upload-ip-3600s",
    ]);
    // Upload: 5 of 12 per minute spent, 7 left; request: 4 of 5 left.
    expect(members(answer.headers.get("ratelimit"))).toEqual([{ name: "request-ip-60s", params: { r: 4, t: 12 } }]);
    expect(answer.headers.get("ratelimit-partition")).toBeNull();
  });

  it("gives a, w and c in draft-12, c being the route's cost in the tightest policy's category, and a RateLimit-Partition", async () => {
    const gateway = clockedGateway({ categories: limits, routes, rate_limit_headers: "draft-12" });
    const ip = uniqueIp();
    await gateway.call(gatewayRequest("/files/a", { method: "PUT", body: "x", ip }));
    const second = await gateway.call(gatewayRequest("/files/b", { method: "PUT", body: "x", ip }));
    expect(second.status).toBe(200);
    // 10 of 12 uploads spent: 2 left, earned back in 10 × 5 s = 50 s; request-ip-60s has 3 left.
    expect(members(second.headers.get("ratelimit"))).toEqual([{ name: "upload-ip-60s", params: { a: 2, w: 50, c: 5 } }]);
    expect(members(second.headers.get("ratelimit-policy"))).toContainEqual({ name: "upload-ip-60s", params: { q: 12, w: 60 } });
    const partitions = members(second.headers.get("ratelimit-partition"));
    expect(partitions.map((p) => [p.name, p.params.pk])).toContainEqual(["request-anonymous-1s", "anonymous"]);
    expect(partitions.map((p) => [p.name, p.params.pk])).toContainEqual(["upload-ip-60s", "ip"]);
    for (const [, value] of second.headers) expect(value).not.toContain(ip);
  });

  it("names the policies a refused request did not fit in violated-policies, in both versions", async () => {
    for (const version of ["draft-11", "draft-12"]) {
      const gateway = clockedGateway({ categories: limits, routes, rate_limit_headers: version });
      const ip = uniqueIp();
      for (let i = 0; i < 2; i++) expect((await gateway.call(gatewayRequest(`/files/${i}`, { method: "PUT", body: "x", ip }))).status).toBe(200);
      // 10 uploads spent; the third needs 5 more: upload-ip-60s does not fit, the request limits still do.
      const refused = await gateway.call(gatewayRequest("/files/2", { method: "PUT", body: "x", ip }));
      expect(refused.status).toBe(429);
      const body = await problemOf(refused);
      expect(body["violated-policies"]).toEqual(["upload-ip-60s"]);
      expect(body.category).toBe("upload");
      const rate = members(refused.headers.get("ratelimit"))[0]!;
      expect(rate.name).toBe("upload-ip-60s");
      expect(rate.params).toEqual(version === "draft-12" ? { a: 2, w: 50, c: 5 } : { r: 2, t: 50 });
      // The legacy headers and the wait name the same tightest limit, not the request limits that still fit: 3 more uploads at 5 s each.
      expect([refused.headers.get("x-ratelimit-limit"), refused.headers.get("x-ratelimit-remaining"), refused.headers.get("x-ratelimit-reset")]).toEqual(["12", "2", "50"]);
      expect(refused.headers.get("retry-after")).toBe("15");
      expect(body.retry_after_ms).toBe(15_000);
    }
  });
});
