// A real alert through the ALERTS queue under wrangler dev, as the console
// and the CLI show it. This file starts its own gateway (alerts need
// `alerts.webhook_url` and ALERT_SECRET, which the shared one has not) with a
// webhook served here that answers 500 to the first delivery and 204 to the
// next: the blocked request's `block.hit` is sent twice with one id, signed
// both times, and GET /alerts, `tollgate alerts` and the Traffic view all
// show it delivered on the second attempt.
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonOut, runCli, tableRows } from "./cli-run";
import { BROWSER_TESTS, CONSOLE_PATH, DESKTOP, launchChromium, screenshot, signIn, visit } from "./console-browser";
import { unique } from "./fixture";
import { type RunningGateway, startGateway } from "./gateway";

const ALERT_SECRET = randomBytes(32).toString("hex");
/** What the webhook answers, delivery by delivery; 204 after these. */
const ANSWERS = [500];

interface Delivery {
  signature: string;
  alertId: string;
  body: string;
}

const deliveries: Delivery[] = [];
let hook: Server;
let gw: RunningGateway;
let browser: Browser | undefined;

beforeAll(async () => {
  hook = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      deliveries.push({ signature: String(req.headers["tollgate-signature"] ?? ""), alertId: String(req.headers["tollgate-alert-id"] ?? ""), body });
      res.writeHead(ANSWERS[deliveries.length - 1] ?? 204).end();
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", resolve));
  const address = hook.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  gw = await startGateway({ timeoutMs: 150_000, tollgate: { alerts: { webhook_url: `http://127.0.0.1:${port}/hook`, retry_base_s: 1 } }, secrets: { ALERT_SECRET } });
  if (BROWSER_TESTS) browser = await launchChromium();
}, 360_000); // the start slots' waits (./start-slots.ts), the gateway's 150 s and the browser's 60 s

afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  await new Promise((resolve) => hook?.close(resolve));
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${gw.gatewayUrl}/_tollgate/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${gw.adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? null : (JSON.parse(text) as unknown) };
}

/** `t=<unix s>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`, checked as a receiver would. */
function signedBySecret(d: Delivery): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(d.signature);
  if (match === null) return false;
  return createHmac("sha256", ALERT_SECRET).update(`${match[1]}.${d.body}`).digest("hex") === match[2];
}

interface ListedAlert {
  id: string;
  type: string;
  tenant: string;
  state: string;
  attempts: Array<{ attempt: number; outcome: string; status: number | null }>;
}

describe("an alert through the ALERTS queue", () => {
  it("sends a block's first hit, retries it after a 500 with the same id, and the CLI and the console show it delivered on the second attempt", async () => {
    const tenant = unique("alerted");
    expect((await call("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const key = (await call("POST", `/tenants/${tenant}/keys`, { name: "alerted" })).body as { id: string; key: string };
    const block = await call("POST", "/blocks", { target: `key:${key.id}`, reason: "e2e alert" });
    expect(block.status).toBe(201);
    const blockId = (block.body as { id: number }).id;
    const blocked = await fetch(`${gw.gatewayUrl}/blocked-now`, { headers: { authorization: `Bearer ${key.key}` } });
    expect(blocked.status).toBe(403);

    await expect.poll(() => deliveries.length, { timeout: 30_000, interval: 250 }).toBeGreaterThanOrEqual(2);
    const [first, second] = deliveries as [Delivery, Delivery];
    const sent = JSON.parse(first.body) as { id: string; type: string; tenant?: string; caller: string; data: { block_id: number } };
    // A key's block is matched before the key is looked up: the alert names the key by the id its credential carries, never the address.
    expect(sent).toMatchObject({ type: "block.hit", caller: `key:${key.id}`, data: { block_id: blockId } });
    expect(first.body).not.toContain("127.0.0.1");
    expect(second.body).toBe(first.body);
    expect([first.alertId, second.alertId]).toEqual([sent.id, sent.id]);
    expect(signedBySecret(first) && signedBySecret(second)).toBe(true);

    const listed = async () => ((await call("GET", "/alerts")).body as { alerts: ListedAlert[] }).alerts.find((a) => a.id === sent.id);
    await expect.poll(async () => (await listed())?.state, { timeout: 15_000, interval: 250 }).toBe("delivered");
    expect(await listed()).toMatchObject({ type: "block.hit", attempts: [{ attempt: 1, outcome: "http_500", status: 500 }, { attempt: 2, outcome: "delivered", status: 204 }] });

    // The CLI, with the auditor token.
    const env = { TOLLGATE_URL: gw.gatewayUrl, TOLLGATE_ADMIN_TOKEN: gw.auditorToken };
    const json = jsonOut<{ alerts: ListedAlert[] }>(await runCli(["alerts", "--json"], { env }));
    expect(json.alerts.find((a) => a.id === sent.id)?.attempts.map((a) => a.outcome)).toEqual(["http_500", "delivered"]);
    const table = await runCli(["alerts"], { env });
    expect(table.code, table.stderr).toBe(0);
    expect(tableRows(table.stdout)).toContainEqual([expect.any(String), "block.hit", sent.tenant ?? "-", "delivered", "2 (http_500, delivered)", sent.id]);

    // The console, with the auditor token: the alert, and the blocked request in the hour's chart (this gateway serves no other).
    if (browser === undefined) return;
    const context = await browser.newContext({ viewport: DESKTOP, baseURL: gw.gatewayUrl });
    const page = await context.newPage();
    await page.goto(CONSOLE_PATH);
    await signIn(page, gw.auditorToken);
    await visit(page, "#/traffic", /^Traffic$/);
    const row = page.getByRole("row", { name: /block\.hit/ });
    expect(await row.locator(".badge").textContent()).toBe("delivered");
    expect(await row.locator("ol.attempts li").allTextContents()).toEqual([expect.stringMatching(/^#1 .* · http_500$/), expect.stringMatching(/^#2 .* · delivered$/)]);
    expect(await page.locator("figure").first().locator('.legend li[data-decision="blocked"]').getAttribute("data-count")).toBe("1");
    await screenshot(page, "traffic-alerts");
    await context.close();
  }, 90_000);
});
