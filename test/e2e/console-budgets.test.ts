// Budget gauges in the console (Debian's Chromium against the Worker under
// wrangler dev): the tenant, keys and org pages show each budget's spend this
// period against its amount, from real traffic, and when it resets.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_TESTS, arrange, foreignRequests, launchChromium, openConsole, screenshot, signIn, visit } from "./console-browser";
import { gateway, unique } from "./fixture";

let browser: Browser;
beforeAll(async () => {
  if (BROWSER_TESTS) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe.runIf(BROWSER_TESTS)("budget gauges in the console", () => {
  it("shows the tenant's, its keys' and its org's budgets with their spend", async () => {
    const org = unique("con-borg");
    const tenant = unique("con-budget");
    await arrange("PUT", `/orgs/${org}`, {});
    await arrange("PUT", `/tenants/${tenant}`, { org });
    const minted = (await arrange("POST", `/tenants/${tenant}/keys`, { name: "metered" })).body as { id: string; key: string };
    expect((await arrange("PUT", `/tenants/${tenant}/budgets/request`, { amount: 10, period: "month" })).status).toBe(201);
    expect((await arrange("PUT", `/keys/${minted.id}/budgets/request`, { amount: 4, period: "day" })).status).toBe(201);
    expect((await arrange("PUT", `/orgs/${org}/budgets/request`, { amount: 100, period: "none" })).status).toBe(201);
    for (let i = 0; i < 3; i++) expect((await fetch(`${gateway().gatewayUrl}/metered`, { headers: { authorization: `Bearer ${minted.key}` } })).status).toBe(200);
    // Eight more keys, every other one with a budget: the keys page reads them several at a time and shows them in the keys' order.
    for (let i = 0; i < 8; i++) {
      const more = (await arrange("POST", `/tenants/${tenant}/keys`, { name: `more-${i}` })).body as { id: string };
      if (i % 2 === 0) expect((await arrange("PUT", `/keys/${more.id}/budgets/request`, { amount: 10 + i, period: "day" })).status).toBe(201);
    }
    const listed = ((await arrange("GET", `/tenants/${tenant}/keys`)).body as { keys: { name: string }[] }).keys.map((k) => k.name);
    const budgeted = listed.filter((name) => name === "metered" || /^more-[0246]$/.test(name));

    const tab = await openConsole(browser);
    const { page } = tab;
    await signIn(page, gateway().adminToken);
    await visit(page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    const monthly = page.getByRole("meter", { name: "request · this month" });
    expect(await monthly.getAttribute("aria-valuetext")).toBe("3 of 10 (30%)");
    expect(await page.locator(".gauge", { hasText: "request · this month" }).textContent()).toContain("7 remaining · resets");
    await screenshot(page, "budgets-tenant");

    await visit(page, `#/keys?tenant=${tenant}`, `Keys of ${tenant}`);
    expect(await page.locator(".gauge", { hasText: "3 of 4" }).count()).toBe(1);
    expect(await page.locator(".gauge", { hasText: "3 of 4" }).getByRole("meter").getAttribute("aria-valuetext")).toBe("3 of 4 (75%)");
    const groupNames = await page.locator("h3").evaluateAll((hs) => hs.map((h) => (h.firstChild?.textContent ?? "").trim()));
    expect(groupNames.filter((n) => budgeted.includes(n))).toEqual(budgeted);
    expect(await page.getByRole("meter", { name: "request · today" }).count()).toBe(5);
    // A group names its key as the table above does.
    const groupIds = await page.locator("h3 code").allTextContents();
    expect(groupIds.length).toBe(5);
    expect(groupIds.every((id) => /^key:[0-9a-z]{12}$/.test(id))).toBe(true);
    await screenshot(page, "budgets-keys");

    await visit(page, `#/orgs/${org}`, `Org ${org}`);
    expect(await page.getByRole("meter", { name: "request · prepaid credits" }).getAttribute("aria-valuetext")).toBe("3 of 100 (3%)");
    expect(await page.locator(".gauge", { hasText: "prepaid credits" }).textContent()).toContain("97 remaining; top-ups add to it");
    await tab.close();
    expect(foreignRequests(tab.requests)).toEqual([]);
    expect(tab.errors).toEqual([]);
  });
});
