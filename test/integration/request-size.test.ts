// max_request_bytes at its boundary: a declared body of exactly the bound is
// forwarded, one byte more is refused 413 before anything reaches the origin.
import { describe, expect, it } from "vitest";
import { callGateway, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { testConfig } from "./admin-helpers";

const BOUND = 1000;
const CONFIG = testConfig({ max_request_bytes: BOUND });

function upload(bytes: number, tag: string): Request {
  return gatewayRequest("/bounded", { method: "POST", ip: uniqueIp(), headers: { "content-length": String(bytes), "x-test-tag": tag }, body: new Uint8Array(bytes) });
}

describe("max_request_bytes", () => {
  it("forwards a body of exactly the bound and refuses one byte more, naming both numbers", async () => {
    const tag = unique("bounded");
    expect((await callGateway(upload(BOUND, tag), { TOLLGATE: CONFIG }, { settle: true })).status).toBe(200);
    const refused = await callGateway(upload(BOUND + 1, tag), { TOLLGATE: CONFIG }, { settle: true });
    expect(refused.status).toBe(413);
    expect(await problemOf(refused)).toMatchObject({ code: "request_too_large", limit: BOUND, size: BOUND + 1 });
    expect((await originLog(tag)).map((seen) => seen.method)).toEqual(["POST"]);
  });
});
