// Trying a new limit in the console, in Debian's Chromium against the Worker
// under wrangler dev: a shadow limit beside a live one refuses nothing, the
// Traffic view's shadow panel shows what it would have refused and whom (the
// counts GET /traffic/shadow answers, each caller linking to explain), the
// limits editor shows it as shadow and switches it on (the next request is
// refused at once, from the state it kept), and a shadow block is made from
// the blocks form, and a shadow budget from the tenant's budget form.
// Screenshots at 1280 and 375 px wide.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCall, gateway, unique } from "./fixture";
import { BROWSER_TESTS, type ConsoleTab, foreignRequests, launchChromium, openConsole, PHONE, screenshot, signIn, uniqueAddress, visit } from "./console-browser";

let browser: Browser;
beforeAll(async () => {
  if (BROWSER_TESTS) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function finish(tab: ConsoleTab): Promise<void> {
  await tab.close();
  expect(foreignRequests(tab.requests)).toEqual([]);
  expect(tab.errors).toEqual([]);
}

const LIVE = { count: 100, window_s: 60 };
const TRIED = { count: 2, window_s: 60, shadow: true };

interface ShadowPolicy {
  policy: string;
  would_refuse: number;
  tenants: Record<string, number>;
  callers: { caller: string; would_refuse: number }[];
}

/** A tenant trying 2 per minute beside its live 100, and a key that sent `sent` requests: each answered 200, the 3rd onwards marked. */
async function tried(prefix: string, sent: number): Promise<{ tenant: string; key: string; caller: string }> {
  const tenant = unique(prefix);
  expect((await adminCall("PUT", `/tenants/${tenant}`, { limits: { request: { key: [LIVE, TRIED] } } })).status).toBe(201);
  const minted = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "shadow" })).body as { id: string; key: string };
  const marks: (string | null)[] = [];
  for (let i = 0; i < sent; i++) {
    const res = await fetch(`${gateway().gatewayUrl}/shadow-e2e/${i}`, { headers: { authorization: `Bearer ${minted.key}` } });
    await res.body?.cancel();
    expect(res.status).toBe(200);
    marks.push(res.headers.get("tollgate-shadow"));
  }
  expect(marks).toEqual(Array.from({ length: sent }, (_, i) => (i < 2 ? null : 'rate_limited;policy="request-key-60s"')));
  return { tenant, key: minted.key, caller: `key:${minted.id}` };
}

/** GET /traffic/shadow's entry for the policy once it counts `n` for `caller` (the read flushes the isolate that counted them). */
async function shadowCounted(caller: string, n: number): Promise<ShadowPolicy> {
  let found: ShadowPolicy | undefined;
  await expect
    .poll(
      async () => {
        const answer = (await adminCall("GET", "/traffic/shadow?minutes=60")).body as { policies: ShadowPolicy[] };
        found = answer.policies.find((p) => p.policy === "request-key-60s");
        return found?.callers.find((c) => c.caller === caller)?.would_refuse;
      },
      { timeout: 15_000, interval: 250 },
    )
    .toBe(n);
  return found!;
}

async function shadowRow(page: Page, caller: string) {
  const section = page.locator("section", { hasText: "Shadow policies, last hour" });
  const row = section.getByRole("row", { name: /request-key-60s/ });
  await row.getByRole("link", { name: caller }).waitFor();
  return { section, row };
}

describe.runIf(BROWSER_TESTS)("trying a new limit in the console", () => {
  it("shows what a shadow limit would have refused and whom, and switches it on from the limits editor", async () => {
    const made = await tried("con-shadow", 5);
    const counted = await shadowCounted(made.caller, 3);
    const tab = await openConsole(browser);
    const { page } = tab;
    await signIn(page, gateway().adminToken);
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Traffic" }).click();
    await page.getByRole("heading", { level: 1, name: /^Traffic$/ }).waitFor();
    const { section, row } = await shadowRow(page, made.caller);
    const cells = await row.locator("td").allTextContents();
    expect(cells[0]).toBe("request-key-60s");
    expect(Number(cells[1]!.replace(/,/g, ""))).toBeGreaterThanOrEqual(counted.would_refuse);
    expect(cells[2]).toMatch(/^rate_limited [\d,]+$/);
    expect(cells[3]).toContain(`${made.tenant} 3`);
    expect(await row.locator("ol.shadow-callers li", { hasText: made.caller }).textContent()).toBe(`${made.caller} 3`);
    await section.screenshot({ path: await screenshot(page, "traffic-shadow") });
    await screenshot(page, "traffic-shadow-page");

    // The caller links to explain, which lists the shadow limit beside the live one.
    await row.getByRole("link", { name: made.caller }).click();
    await page.getByRole("heading", { level: 1, name: `Explain ${made.caller}` }).waitFor();
    const limitCells = await page.getByRole("row", { name: /^request key/ }).locator("td:nth-child(5)").allTextContents();
    expect(limitCells).toEqual(["100 per 60 s", "2 per 60 s shadow"]);

    // The limits editor shows the row as shadow; set to enforced and saved, the next request is refused at once.
    await visit(page, `#/tenants/${made.tenant}`, `Tenant ${made.tenant}`);
    const enforcement = page.locator("fieldset.limits").getByLabel("Shadow", { exact: true });
    expect(await enforcement.count()).toBe(2);
    expect(await enforcement.nth(0).inputValue()).toBe("");
    expect(await enforcement.nth(1).inputValue()).toBe("true");
    await screenshot(page, "limits-shadow");
    await enforcement.nth(1).selectOption("");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved.").waitFor();
    const saved = (await adminCall("GET", `/tenants/${made.tenant}`)).body as { limits: unknown };
    expect(saved.limits).toEqual({ request: { key: [LIVE, { count: 2, window_s: 60 }] } });
    const next = await fetch(`${gateway().gatewayUrl}/shadow-e2e/next`, { headers: { authorization: `Bearer ${made.key}` } });
    await next.body?.cancel();
    expect(next.status).toBe(429);
    await finish(tab);
  });

  it("fits a phone's width, and makes a shadow block from the blocks form", async () => {
    const made = await tried("con-shadow-ph", 3);
    await shadowCounted(made.caller, 1);
    const tab = await openConsole(browser, PHONE);
    const { page } = tab;
    await signIn(page, gateway().adminToken);
    await visit(page, "#/traffic", /^Traffic$/);
    await shadowRow(page, made.caller);
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(page, "traffic-shadow-phone");

    const address = uniqueAddress();
    await visit(page, "#/blocks", "Blocks");
    await page.getByLabel("Target").fill(`ip:${address}`);
    await page.getByLabel("Shadow").selectOption("true");
    await page.getByRole("button", { name: "Block", exact: true }).click();
    await page.getByText(`Shadow-blocked ip:${address}.`).waitFor();
    const listed = page.getByRole("row", { name: new RegExp(address.replace(/\./g, "\\.")) });
    expect(await listed.locator(".badge.shadow").textContent()).toBe("shadow");
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(page, "blocks-shadow-phone");
    const res = await fetch(`${gateway().gatewayUrl}/shadow-e2e/blocked`, { headers: { "cf-connecting-ip": address } });
    await res.body?.cancel();
    expect(res.status).toBe(200);
    expect(res.headers.get("tollgate-shadow")).toMatch(/^blocked;policy="block-\d+"$/);
    await finish(tab);
  });

  it("sets a shadow budget from the tenant's budget form: the confirmation and the gauge say it refuses nothing", async () => {
    const tenant = unique("con-sbudget");
    expect((await adminCall("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const tab = await openConsole(browser);
    const { page } = tab;
    await signIn(page, gateway().adminToken);
    await visit(page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    const budgets = page.locator("section", { has: page.getByRole("heading", { name: "Budgets" }) });
    const add = budgets.locator("form", { has: page.getByRole("group", { name: "Add a budget" }) });
    await add.getByLabel("Category").fill("request");
    await add.getByLabel("Amount").fill("1000");
    await add.getByLabel("Shadow").selectOption("true");
    await add.getByRole("button", { name: "Review the budget" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    expect(await dialog.locator("#confirm-message p").allTextContents()).toContain("A shadow budget: kept as if enforced, but past it nothing is refused (nor charged to it); those requests are marked and show under Traffic.");
    await dialog.getByRole("button", { name: "Set budget" }).click();
    await dialog.waitFor({ state: "detached" });
    await budgets.getByText("request · this month · shadow").waitFor();
    expect(await budgets.textContent()).toContain("shadow: refuses nothing");
    const stored = (await adminCall("GET", `/tenants/${tenant}/budgets/request`)).body as { shadow: boolean; amount: number };
    expect(stored).toMatchObject({ shadow: true, amount: 1000 });
    await screenshot(page, "budget-shadow");
    await finish(tab);
  });
});
