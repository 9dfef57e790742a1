// `npm start` waits for the gateway's health (scripts/lib/health-wait.mjs):
// a 503 that says the config is invalid ends the wait at once with the
// problem health names, where it used to wait out the start timeout; any
// other 503 (not ready yet) is waited on; 200 is up.
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { waitForHealth } from "../../scripts/lib/health-wait.mjs";

let server: Server | undefined;

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A health endpoint on 127.0.0.1 answering each call with the next of `answers` (the last one again after that). */
async function healthAnswering(answers: { status: number; body: unknown }[]): Promise<{ url: string; calls: () => number }> {
  let calls = 0;
  server = createServer((_req, res) => {
    const answer = answers[Math.min(calls, answers.length - 1)]!;
    calls++;
    res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return { url: `http://127.0.0.1:${port}/_tollgate/health`, calls: () => calls };
}

describe("npm start's wait for health", () => {
  it("stops at the first 503 naming an invalid config, with its field and message", async () => {
    const health = await healthAnswering([{ status: 503, body: { status: "config_invalid", config: "invalid", error: { field: "max_request_bytes", message: "must be >= 0" } } }]);
    const result = await waitForHealth(health.url, Date.now() + 60_000, 10);
    expect(result).toEqual({ up: false, invalid: { field: "max_request_bytes", message: "must be >= 0" } });
    expect(health.calls()).toBe(1);
  });

  it("waits through other answers until 200", async () => {
    const health = await healthAnswering([
      { status: 503, body: { status: "starting" } },
      { status: 500, body: {} },
      { status: 200, body: { status: "ok" } },
    ]);
    expect(await waitForHealth(health.url, Date.now() + 60_000, 10)).toEqual({ up: true });
    expect(health.calls()).toBe(3);
  });

  it("says nothing answered when the deadline passes", async () => {
    const health = await healthAnswering([{ status: 503, body: { status: "starting" } }]);
    expect(await waitForHealth(health.url, Date.now() + 200, 10)).toEqual({ up: false, invalid: null });
  });
});
