// Budgets in the console (Debian's Chromium against the Worker under
// wrangler dev): the tenant, keys and org pages show each budget's spend this
// period against its amount, from real traffic, when it resets and what its
// thresholds do; and an operator puts, tops up and deletes budgets there,
// each after a confirmation that says what it will do, through the admin
// API, while the auditor sees them and can change nothing. Screenshots at
// 1280 and 375 px wide.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_TESTS, arrange, type ConsoleTab, foreignRequests, launchChromium, openConsole, PHONE, screenshot, signIn, visit } from "./console-browser";
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
    // The thresholds say what they do, not quota's soft and hard.
    expect(await page.locator(".gauge", { hasText: "request · this month" }).locator(".hint").first().textContent()).toBe("alerts at 80 % and 100 % · refuses at 100 %");
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

async function signedIn(token = gateway().adminToken, viewport?: { width: number; height: number }): Promise<ConsoleTab> {
  const tab = await openConsole(browser, viewport);
  await signIn(tab.page, token);
  return tab;
}

async function finish(tab: ConsoleTab): Promise<void> {
  await tab.close();
  expect(foreignRequests(tab.requests)).toEqual([]);
  expect(tab.errors).toEqual([]);
}

/** The open confirmation's lines, then its answer: confirm (its button's name) or Cancel. */
async function confirmation(page: Page, answer: string): Promise<string[]> {
  const dialog = page.getByRole("dialog");
  await dialog.waitFor();
  const lines = await dialog.locator("#confirm-message p").allTextContents();
  await dialog.getByRole("button", { name: answer }).click();
  await dialog.waitFor({ state: "detached" });
  return lines;
}

async function budgetOf(owner: string, category: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await arrange("GET", `${owner}/budgets/${category}`);
  return { status: answer.status, body: answer.body as Record<string, unknown> };
}

describe.runIf(BROWSER_TESTS)("changing budgets in the console (issue 40 item 11)", () => {
  it("puts a tenant's budget after a confirmation that says what it does, changes it keeping the month's spend, and deletes it", async () => {
    const tenant = unique("con-bput");
    await arrange("PUT", `/tenants/${tenant}`, {});
    const minted = (await arrange("POST", `/tenants/${tenant}/keys`, { name: "spender" })).body as { id: string; key: string };
    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    const budgets = page.locator("section", { has: page.getByRole("heading", { name: "Budgets" }) });
    expect(await budgets.getByText("No budgets.").isVisible()).toBe(true);
    expect(await budgets.textContent()).not.toContain("`");

    // A category the deployment does not know: the API's message, next to the field.
    const add = budgets.locator("form", { has: page.getByRole("group", { name: "Add a budget" }) });
    await add.getByLabel("Category").fill("nosuch");
    await add.getByLabel("Amount").fill("10");
    await add.getByRole("button", { name: "Review the budget" }).click();
    await confirmation(page, "Set budget");
    const categoryBox = add.locator(".field", { has: page.getByLabel("Category") });
    await categoryBox.locator(".field-error").waitFor();
    expect(await categoryBox.locator(".field-error").textContent()).toMatch(/^no category named nosuch: one of .*request/);
    expect((await budgetOf(`/tenants/${tenant}`, "nosuch")).status).toBe(400);

    await add.getByLabel("Category").fill("request");
    await add.getByLabel("Alerts at (%)").fill("50, 100");
    await add.getByRole("button", { name: "Review the budget" }).click();
    // Cancelled: nothing sent, and it says so.
    expect(await confirmation(page, "Cancel")).toEqual([
      `tenant:${tenant} may spend up to 10 requests per month; this month starts from 0 spent.`,
      "Past it, its requests are refused 429 budget_exhausted until the month resets.",
      "Alerts at 50 % and 100 % of it (an audit event, and the webhook if one is set).",
    ]);
    await add.getByText("Nothing was changed.").waitFor();
    expect((await budgetOf(`/tenants/${tenant}`, "request")).status).toBe(404);
    await add.getByRole("button", { name: "Review the budget" }).click();
    await page.getByRole("dialog").waitFor();
    await screenshot(page, "budget-confirm", { fullPage: false });
    await confirmation(page, "Set budget");
    await page.getByText(`The request budget of tenant:${tenant} is 10 requests per month.`).waitFor();
    expect((await budgetOf(`/tenants/${tenant}`, "request")).body).toMatchObject({ amount: 10, period: "month", thresholds: [0.5, 1], used: 0 });
    const gauge = page.locator(".gauge", { hasText: "request · this month" });
    expect(await gauge.locator(".hint").first().textContent()).toBe("alerts at 50 % and 100 % · refuses at 100 %");

    // Three requests spend it; a change in the same period keeps that spend.
    for (let i = 0; i < 3; i++) expect((await fetch(`${gateway().gatewayUrl}/spend`, { headers: { authorization: `Bearer ${minted.key}` } })).status).toBe(200);
    await page.reload();
    await page.getByRole("heading", { level: 1, name: `Tenant ${tenant}` }).waitFor();
    await page.locator(".budget summary", { hasText: "Change" }).click();
    const change = page.locator(".budget form");
    expect(await change.getByLabel("Amount").inputValue()).toBe("10");
    expect(await change.getByLabel("Alerts at (%)").inputValue()).toBe("50, 100");
    await change.getByLabel("Amount").fill("2");
    await change.getByRole("button", { name: "Review the change" }).click();
    expect(await confirmation(page, "Change budget")).toEqual([
      "Its request budget goes from 10 requests per month to 2 requests per month.",
      "The 3 spent this month stays: nothing remains, so its requests are refused until this month is over.",
      "Past it, its requests are refused 429 budget_exhausted until the month resets.",
      "Alerts at 50 % and 100 % of it (an audit event, and the webhook if one is set).",
    ]);
    await page.getByText(`The request budget of tenant:${tenant} is 2 requests per month.`).waitFor();
    expect((await budgetOf(`/tenants/${tenant}`, "request")).body).toMatchObject({ amount: 2, used: 3, remaining: 0 });
    await screenshot(page, "budget-changed");

    await page.getByRole("button", { name: `Delete the request budget of tenant:${tenant}` }).click();
    expect(await confirmation(page, "Delete budget")).toEqual([
      `The request budget of tenant:${tenant} (3 of 2 spent this month) stops capping its requests at once.`,
      "Putting one again later starts anew, from 0 spent.",
    ]);
    await page.getByText(`Deleted the request budget of tenant:${tenant}.`).waitFor();
    expect((await budgetOf(`/tenants/${tenant}`, "request")).status).toBe(404);
    await finish(tab);
  });

  it("tops up an org's credits with a reason the audit log keeps, and adds a budget to a key from the keys page", async () => {
    const org = unique("con-bcred");
    const tenant = unique("con-bkeys");
    await arrange("PUT", `/orgs/${org}`, {});
    await arrange("PUT", `/tenants/${tenant}`, { org });
    await arrange("POST", `/tenants/${tenant}/keys`, { name: "first" });
    const second = (await arrange("POST", `/tenants/${tenant}/keys`, { name: "second" })).body as { id: string };
    expect((await arrange("PUT", `/orgs/${org}/budgets/request`, { amount: 100, period: "none" })).status).toBe(201);

    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/orgs/${org}`, `Org ${org}`);
    const credits = page.locator(".budget", { hasText: "prepaid credits" });
    await credits.locator("summary", { hasText: "Top up" }).click();
    const topUp = credits.locator("form", { has: page.getByRole("group", { name: "Top up the request credits" }) });
    await topUp.getByLabel("Add").fill("50");
    await topUp.getByLabel("Reason").fill("invoice 118");
    await topUp.getByRole("button", { name: "Review the top-up" }).click();
    expect(await confirmation(page, "Top up")).toEqual([`Adds 50 requests to the request credits of org:${org}: 100 → 150 in all, 150 remaining.`, "Reason, kept in the audit log: invoice 118"]);
    await page.getByText("Added 50 requests: 150 in all, 150 remaining.").waitFor();
    expect((await budgetOf(`/orgs/${org}`, "request")).body).toMatchObject({ amount: 150, period: "none" });
    const topups = (await arrange("GET", "/audit?kind=budget_topup&limit=200")).body as { events: Array<{ subject: string | null; detail: Record<string, unknown> }> };
    expect(topups.events.filter((e) => e.subject === `org:${org}`).map((e) => e.detail)).toEqual([expect.objectContaining({ amount: 50, reason: "invoice 118", new_amount: 150 })]);
    await screenshot(page, "budget-topup");

    // A key without a budget gets one from the keys page, picked by name.
    await visit(page, `#/keys?tenant=${tenant}`, `Keys of ${tenant}`);
    const add = page.locator("form", { has: page.getByRole("group", { name: "Add a budget to a key" }) });
    await add.getByLabel("Key", { exact: true }).selectOption({ label: `second · key:${second.id}` });
    await add.getByLabel("Category").fill("request");
    await add.getByLabel("Amount").fill("20");
    await add.getByLabel("Period").selectOption("day");
    await add.getByRole("button", { name: "Review the budget" }).click();
    expect(await confirmation(page, "Set budget")).toEqual([
      `key “second” (key:${second.id}) may spend up to 20 requests per day; today starts from 0 spent.`,
      "Past it, its requests are refused 429 budget_exhausted until the day resets.",
      "Alerts at 80 % and 100 % of it (an audit event, and the webhook if one is set).",
    ]);
    await page.getByRole("meter", { name: "request · today" }).waitFor();
    expect((await budgetOf(`/keys/${second.id}`, "request")).body).toMatchObject({ amount: 20, period: "day" });
    expect(await page.locator("h3 code").allTextContents()).toEqual([`key:${second.id}`]);
    await screenshot(page, "budget-keys-added");
    await finish(tab);

    // At a phone's width: the same controls, nothing wider than the screen.
    const phone = await signedIn(gateway().adminToken, PHONE);
    await visit(phone.page, `#/orgs/${org}`, `Org ${org}`);
    await phone.page.locator(".budget summary", { hasText: "Top up" }).click();
    expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(phone.page, "budget-topup-phone");
    await visit(phone.page, `#/keys?tenant=${tenant}`, `Keys of ${tenant}`);
    expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(phone.page, "budget-keys-phone");
    await finish(phone);
  });

  it("shows the auditor every budget and no control that changes one", async () => {
    const tenant = unique("con-baud");
    await arrange("PUT", `/tenants/${tenant}`, {});
    expect((await arrange("PUT", `/tenants/${tenant}/budgets/request`, { amount: 5, period: "none" })).status).toBe(201);
    const tab = await signedIn(gateway().auditorToken);
    const { page } = tab;
    await visit(page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    await page.getByRole("meter", { name: "request · prepaid credits" }).waitFor();
    const section = page.locator("section", { has: page.getByRole("heading", { name: "Budgets" }) });
    const controls = section.locator("button, input, select");
    expect(await controls.count()).toBeGreaterThan(5);
    expect(await section.locator("button:enabled, input:enabled, select:enabled").count()).toBe(0);
    expect(await page.getByRole("button", { name: `Delete the request budget of tenant:${tenant}` }).isDisabled()).toBe(true);
    await screenshot(page, "budget-auditor");
    await finish(tab);
  });
});
