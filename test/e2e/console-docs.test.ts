// The picture docs/console.md shows (docs/console.png), written on every
// run from what a newcomer has after `npm start` and a few minutes of use:
// tenant `dev` and its key exactly as `npm start` seeds them
// (scripts/lib/dev-seed.mjs), a monthly budget, a few uploads, and a CI key
// with a limit of its own that some requests ran into. A gateway of this
// file's own (wrangler.toml's config, a fresh D1), so no other test's
// tenants show; Debian's Chromium at 1280×800, the menu (Traffic included)
// in view.
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCaller, DEV_TENANT, ensureDevTenantAndKey } from "../../scripts/lib/dev-seed.mjs";
import { BROWSER_TESTS, DESKTOP, foreignRequests, launchChromium, openConsole, PHONE, screenshot, signIn, visit } from "./console-browser";
import { type RunningGateway, startGateway } from "./gateway";

/** Where docs/console.md finds it. */
const DOCS_PICTURE = join(import.meta.dirname, "..", "..", "docs", "console.png");

let gw: RunningGateway | undefined;
let browser: Browser | undefined;

beforeAll(async () => {
  if (!BROWSER_TESTS) return;
  gw = await startGateway({ timeoutMs: 150_000 });
  browser = await launchChromium();
}, 360_000); // the start slots' waits (./start-slots.ts), the gateway's 150 s and the browser's 60 s

afterAll(async () => {
  await browser?.close();
  await gw?.stop();
});

/** A request through the gateway with a key; answers the status. */
async function keyed(key: string, path: string, init: RequestInit = {}): Promise<number> {
  const res = await fetch(`${gw?.gatewayUrl}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } });
  await res.arrayBuffer();
  return res.status;
}

describe.runIf(BROWSER_TESTS)("the console's picture in the docs", () => {
  it("writes docs/console.png from tenant dev as npm start seeds it, after a little use", async () => {
    const running = gw as RunningGateway;
    const admin = adminCaller(running.gatewayUrl, running.adminToken);
    const seeded = await ensureDevTenantAndKey(admin, undefined);
    expect(seeded.tenantCreated).toBe(true);

    // What the README has a newcomer do next: a monthly budget, some uploads, a key for CI with a tight limit of its own.
    expect((await admin("PUT", `/tenants/${DEV_TENANT}/budgets/request`, { amount: 10_000, period: "month" })).status).toBe(201);
    const ci = (await admin("POST", `/tenants/${DEV_TENANT}/keys`, { name: "ci", limits: { request: [{ count: 5, window_s: 60 }] } })).body as { key: string };
    for (const [name, bytes] of [["invoice-0001.pdf", 184_320], ["invoice-0002.pdf", 152_064], ["logo.png", 48_128]] as const) {
      expect(await keyed(seeded.key, `/objects/${name}`, { method: "PUT", body: new Uint8Array(bytes), headers: { "content-length": String(bytes) } })).toBe(200);
    }
    for (let i = 0; i < 24; i++) expect(await keyed(seeded.key, `/hello?from=tollgate&n=${i}`)).toBe(200);
    const ciStatuses = [];
    for (let i = 0; i < 9; i++) ciStatuses.push(await keyed(ci.key, "/builds/latest"));
    expect(ciStatuses.filter((s) => s === 429).length).toBe(4);

    const tab = await openConsole(browser as Browser, DESKTOP, running.gatewayUrl);
    const { page } = tab;
    await signIn(page, running.adminToken);
    await visit(page, `#/tenants/${DEV_TENANT}`, `Tenant ${DEV_TENANT}`);
    await page.getByRole("meter", { name: "Stored bytes" }).waitFor();
    await page.getByRole("meter", { name: "request · this month" }).waitFor();
    // The menu shows every view, Traffic among them, and no test's random names are on the page.
    expect(await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Traffic" }).isVisible()).toBe(true);
    expect(await page.locator("main").textContent()).not.toMatch(/-[0-9a-f]{8}-\d+/);
    expect(await page.getByRole("meter", { name: "Stored bytes" }).getAttribute("aria-valuetext")).toBe("384.5 kB of 1 MB (38%)");
    await page.screenshot({ path: DOCS_PICTURE, fullPage: false });
    await screenshot(page, "docs-console");
    await tab.close();
    expect(foreignRequests(tab.requests, running.gatewayUrl)).toEqual([]);
    expect(tab.errors).toEqual([]);

    // The same page on a phone, to look at beside it.
    const phone = await openConsole(browser as Browser, PHONE, running.gatewayUrl);
    await signIn(phone.page, running.adminToken);
    await visit(phone.page, `#/tenants/${DEV_TENANT}`, `Tenant ${DEV_TENANT}`);
    await screenshot(phone.page, "docs-console-phone", { fullPage: false });
    await phone.close();
    expect(phone.errors).toEqual([]);
  });
});
