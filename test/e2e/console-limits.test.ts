// A limit's delay_max_ms and a route's charge_on_status in the console
// (issue 40 item 12), in Debian's Chromium against a gateway of its own whose
// config charges failed logins only (console-demo.ts): the limits editor
// reads, saves and validates "Hold up to (ms)", the tenants list and Explain
// say a limit holds, and Explain lists the routes charged by the origin's
// answer. Screenshots at 1280 and 375 px wide.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_TESTS, type ConsoleTab, foreignRequests, launchChromium, openConsole, PHONE, screenshot, signIn, visit } from "./console-browser";
import { type DemoGateway, startDemoGateway } from "./console-demo";
import { unique } from "./fixture";

let gw: DemoGateway | undefined;
let browser: Browser | undefined;

beforeAll(async () => {
  if (!BROWSER_TESTS) return;
  gw = await startDemoGateway();
  browser = await launchChromium();
}, 360_000); // the start slots' waits (./start-slots.ts), the gateway's 150 s and the browser's 60 s

afterAll(async () => {
  await browser?.close();
  await gw?.stop();
});

function demo(): DemoGateway {
  if (gw === undefined) throw new Error("the demo gateway did not start");
  return gw;
}

async function signedIn(viewport?: { width: number; height: number }): Promise<ConsoleTab> {
  const tab = await openConsole(browser as Browser, viewport, demo().gatewayUrl);
  await signIn(tab.page, demo().adminToken);
  return tab;
}

async function finish(tab: ConsoleTab): Promise<void> {
  await tab.close();
  expect(foreignRequests(tab.requests, demo().gatewayUrl)).toEqual([]);
  expect(tab.errors).toEqual([]);
}

const HELD = { request: { key: [{ count: 100, window_s: 1, burst: 200, delay_max_ms: 500 }], tenant: [{ count: 1000, window_s: 1 }] } };

describe.runIf(BROWSER_TESTS)("holding requests and charging by status in the console", () => {
  it("edits a limit's delay_max_ms as 'Hold up to (ms)', saves it, and shows the API's refusal next to it", async () => {
    const tenant = unique("held");
    expect((await demo().admin("PUT", `/tenants/${tenant}`, { limits: HELD })).status).toBe(201);
    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    const hold = page.getByLabel("Hold up to (ms)");
    expect(await hold.count()).toBe(2);
    expect(await hold.first().inputValue()).toBe("500");
    expect(await hold.nth(1).inputValue()).toBe("");
    await hold.first().fill("1500");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved.").waitFor();
    const saved = (await demo().admin("GET", `/tenants/${tenant}`)).body as { limits: unknown };
    expect(saved.limits).toEqual({ request: { key: [{ count: 100, window_s: 1, burst: 200, delay_max_ms: 1500 }], tenant: [{ count: 1000, window_s: 1 }] } });
    await screenshot(page, "limits-hold");

    await page.getByLabel("Hold up to (ms)").first().fill("20000");
    await page.getByRole("button", { name: "Save changes" }).click();
    const error = page.locator(".field", { has: page.getByLabel("Hold up to (ms)").first() }).locator(".field-error");
    await error.waitFor();
    expect(await error.textContent()).toContain("must be <= 10000");
    expect(await page.getByLabel("Hold up to (ms)").first().getAttribute("aria-invalid")).toBe("true");
    // Nothing was changed by the refused save.
    expect(((await demo().admin("GET", `/tenants/${tenant}`)).body as { limits: unknown }).limits).toEqual(saved.limits);

    await visit(page, "#/tenants", "Tenants");
    expect(await page.getByRole("row", { name: new RegExp(tenant) }).textContent()).toContain("request (key): 100 per 1 s, burst 200, holds up to 1,500 ms");
    await finish(tab);

    const phone = await signedIn(PHONE);
    await visit(phone.page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    expect(await phone.page.getByLabel("Hold up to (ms)").first().inputValue()).toBe("1500");
    expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(phone.page, "limits-hold-phone");
    await finish(phone);
  });

  it("explains a limit that holds and the routes charged only when the origin's status matches", async () => {
    const tenant = unique("held-explain");
    expect((await demo().admin("PUT", `/tenants/${tenant}`, { limits: HELD })).status).toBe(201);
    const key = (await demo().admin("POST", `/tenants/${tenant}/keys`, { name: "checkout" })).body as { id: string };
    for (const [viewport, name] of [[undefined, "explain-held"], [PHONE, "explain-held-phone"]] as const) {
      const tab = await signedIn(viewport);
      const { page } = tab;
      await visit(page, `#/explain?caller=key:${key.id}`, `Explain key:${key.id}`);
      const limits = page.getByRole("region", { name: `Limits that apply to key:${key.id}` });
      const cells = await limits.locator("tbody tr").evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll("td")].map((td) => td.textContent)));
      expect(cells.filter((row) => row[0] === "request" && row[1] === "key").map((row) => row[4])).toEqual(["100 per 1 s, burst 200, holds up to 500 ms"]);
      expect(cells.filter((row) => row[0] === "request" && row[1] === "tenant").map((row) => row[4])).toEqual(["1,000 per 1 s"]);
      const routes = page.getByRole("region", { name: "Routes charged only on some statuses" });
      expect(await routes.locator("tbody tr").count()).toBe(1);
      expect(await routes.locator("tbody td").allTextContents()).toEqual(["POST /login", "login_failure 1", "4xx"]);
      await screenshot(page, name);
      if (viewport === PHONE) expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
      await finish(tab);
    }
  });
});
