import { env, exports } from "cloudflare:workers";
import { inject, it, expect } from "vitest";
it("answers", async () => {
  const r = await exports.default.fetch("http://gw.test/x");
  expect(r.status).toBe(200);
  const o = await fetch(`${env.ORIGIN_URL}/hello?a=1`);
  expect((await o.json() as {path:string}).path).toBe("/hello");
  const rows = await env.DB.prepare("select count(*) as n from tenants").first();
  expect(rows).toEqual({ n: 0 });
  expect(inject("originPort")).toBeGreaterThan(0);
});
