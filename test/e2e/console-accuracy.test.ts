// The console's Accuracy view (Debian's Chromium against the Worker under
// wrangler dev): a key with a global limit sends requests past it, and the
// view shows its ledger — the caller named by its key id, linked to explain —
// with the units admitted against the exact GCRA's figure and the bound, over
// the span and in the busiest minute, and the ledger's calls per second; a
// budget's credits spent through leases, with their refusals; the auditor
// reads it too; a span the API refuses is named at its field.
// Screenshots at 1280 and 375 px wide.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { arrange, BROWSER_TESTS, foreignRequests, launchChromium, openConsole, PHONE, screenshot, signIn, visit } from "./console-browser";
import { gateway, unique } from "./fixture";

let browser: Browser;
beforeAll(async () => {
  if (BROWSER_TESTS) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const TITLE = "Accuracy: global limits and leased budgets";

interface Report {
  ledgers: { caller: string | null; limits: { admitted: number; exact: number; bound: number }[] }[];
}

describe.runIf(BROWSER_TESTS)("the console's accuracy view", () => {
  it("shows a global limit's admitted units against the exact figure and the bound, and its ledger's calls", async () => {
    const tenant = unique("con-acc");
    expect((await arrange("PUT", `/tenants/${tenant}`, { limits: { request: { key: [{ count: 6, window_s: 3600, burst: 5, scope: "global" }] } } })).status).toBe(201);
    const minted = (await arrange("POST", `/tenants/${tenant}/keys`, { name: "global" })).body as { id: string; key: string };
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await fetch(`${gateway().gatewayUrl}/accuracy`, { headers: { authorization: `Bearer ${minted.key}` } })).status);
    expect(statuses.filter((s) => s === 200).length).toBe(5);
    // One unit every 10 minutes after the burst: however slowly the machine sends them, the sixth to eighth are refused.
    // The ledger tells the directory in the background of its first grant.
    let figures: Report["ledgers"][number] | undefined;
    for (let attempt = 0; attempt < 50 && figures === undefined; attempt++) {
      figures = ((await arrange("GET", "/global/accuracy?limit=200")).body as Report).ledgers.find((l) => l.caller === `key:${minted.id}`);
      if (figures === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    const limit = figures!.limits[0]!;
    expect(limit.admitted).toBe(5);
    // A tenant's credits, spent through leases and refused once spent.
    const budgeted = unique("con-accb");
    expect((await arrange("PUT", `/tenants/${budgeted}`, {})).status).toBe(201);
    const spender = (await arrange("POST", `/tenants/${budgeted}/keys`, { name: "credits" })).body as { key: string };
    expect((await arrange("PUT", `/tenants/${budgeted}/budgets/request`, { amount: 3, period: "none" })).status).toBe(201);
    const spent: number[] = [];
    for (let i = 0; i < 5; i++) spent.push((await fetch(`${gateway().gatewayUrl}/credits`, { headers: { authorization: `Bearer ${spender.key}` } })).status);
    expect(spent).toEqual([200, 200, 200, 402, 402]);

    const tab = await openConsole(browser);
    const { page } = tab;
    await signIn(page, gateway().adminToken);
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Accuracy" }).click();
    await page.getByRole("heading", { level: 1, name: TITLE }).waitFor();
    const block = page.locator(".accuracy-ledger", { has: page.getByRole("link", { name: `key:${minted.id}` }) });
    await block.waitFor();
    expect(await block.getByRole("link", { name: `key:${minted.id}` }).getAttribute("href")).toBe(`#/explain?caller=key%3A${minted.id}`);
    expect(await block.textContent()).toContain(`tenant ${tenant}`);
    expect(await block.locator("h4").first().textContent()).toBe("request · 6 per 1 h, bursts of 5 · L = 72 s");
    const span = block.getByRole("meter").first();
    expect(await span.getAttribute("aria-valuetext")).toBe(`5 of ${limit.bound} (${Math.round((5 / limit.bound) * 100)}%)`);
    expect(await block.locator(".gauge").first().locator(".hint").textContent()).toBe(`exact GCRA ${limit.exact.toLocaleString("en-US")} · bound ${limit.bound.toLocaleString("en-US")} · within the exact figure`);
    // Reaching the exact figure (the whole burst spent) is not a warning.
    expect(await block.locator(".gauge").first().getAttribute("class")).toBe("gauge ok");
    expect(await block.getByRole("meter").nth(1).getAttribute("aria-valuetext")).toMatch(/^5 of \d+ \(\d+%\)$/);
    expect(await block.locator(".meta").textContent()).toMatch(/^Ledger calls: \d+ · [\d.]+ a second · at most \d+ in one second$/);
    await block.locator("summary", { hasText: "Figures" }).click();
    expect(await block.getByRole("cell").allTextContents()).toEqual(expect.arrayContaining(["5"]));
    const budgetRow = page.getByRole("row", { name: new RegExp(`tenant:${budgeted}`) });
    expect(await budgetRow.getByRole("cell").allTextContents()).toEqual([`tenant:${budgeted}`, "request", "3 of 3", expect.stringMatching(/^\d$/), expect.stringMatching(/^\d+ \(3\)$/), "1", "0"]);
    await block.scrollIntoViewIfNeeded();
    await screenshot(page, "accuracy");

    // A span the API refuses is named at its field.
    await visit(page, "#/accuracy?minutes=61", TITLE);
    const box = page.locator(".field", { has: page.getByLabel("Last minutes", { exact: true }) });
    await box.locator(".field-error").waitFor();
    expect(await box.locator(".field-error").textContent()).toContain("60");
    expect(await page.getByLabel("Last minutes", { exact: true }).getAttribute("aria-invalid")).toBe("true");
    await tab.close();
    expect(foreignRequests(tab.requests)).toEqual([]);
    expect(tab.errors).toEqual([]);

    const phone = await openConsole(browser, PHONE);
    await signIn(phone.page, gateway().auditorToken);
    await visit(phone.page, "#/accuracy", TITLE);
    const onPhone = phone.page.locator(".accuracy-ledger", { has: phone.page.getByRole("link", { name: `key:${minted.id}` }) });
    await onPhone.waitFor();
    await onPhone.scrollIntoViewIfNeeded();
    // Nothing wider than the phone's screen.
    expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(phone.page, "accuracy-phone", { fullPage: false });
    await phone.close();
    expect(phone.errors).toEqual([]);
  });
});
