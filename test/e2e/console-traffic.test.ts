// The console's Traffic view in Debian's Chromium against the Worker under
// wrangler dev: refusals made through the gateway show per minute with the
// counts GET /traffic answers, the caller refused most links to its
// explanation, recent alerts show their state and every attempt, the
// auditor sees the same, and a phone's width holds it. Screenshots at both
// sizes go to test/e2e/screenshots/.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCall, gateway } from "./fixture";
import { BROWSER_TESTS, type ConsoleTab, foreignRequests, launchChromium, openConsole, PHONE, screenshot, signIn, visit } from "./console-browser";
import { insertAlert, makeRefusals, refusalsRecorded, totals } from "./traffic-arrange";

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

/** What the first chart (the last hour) shows for each minute that has requests. */
async function chartedMinutes(page: Page): Promise<Array<{ minute: string; admitted: number; refused: number }>> {
  const slots = page.locator("figure").first().locator("g.slot");
  const shown = await slots.evaluateAll((nodes) =>
    nodes.map((n) => ({ minute: n.getAttribute("data-minute") ?? "", admitted: Number(n.getAttribute("data-admitted")), refused: Number(n.getAttribute("data-refused")) })),
  );
  return shown.filter((s) => s.admitted + s.refused > 0);
}

describe.runIf(BROWSER_TESTS)("the Traffic view", () => {
  it("shows a tenant's refusals per minute with the counts GET /traffic answers, and links the caller refused most to explain", async () => {
    const made = await makeRefusals("con-traffic", 3, 9);
    const minutes = await refusalsRecorded(made);
    const alert = await insertAlert({ type: "rate_limit.sustained", tenant: made.tenant, caller: made.caller, state: "delivered", attempts: [{ outcome: "http_500", status: 500 }, { outcome: "delivered", status: 204 }], data: { category: "request", count: 1250, window_s: 60 } });
    const refusedAlert = await insertAlert({ type: "block.hit", tenant: made.tenant, caller: made.caller, state: "failed", attempts: [{ outcome: "http_404", status: 404 }], data: { block_id: 1234 } });

    const tab = await openConsole(browser);
    const { page } = tab;
    await signIn(page, gateway().adminToken);
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Traffic" }).click();
    await page.getByRole("heading", { level: 1, name: /^Traffic$/ }).waitFor();
    await page.getByLabel("Tenant", { exact: true }).fill(made.tenant);
    await page.getByRole("button", { name: "Show traffic" }).click();
    await page.getByRole("heading", { level: 1, name: `Traffic of ${made.tenant}` }).waitFor();

    // The hour and the day: the headline figures, each minute of the chart, and the legend, as the API counts them.
    const hour = page.locator("figure").first();
    expect(await hour.locator("[data-admitted]").first().getAttribute("data-admitted")).toBe(String(totals(minutes).admitted));
    expect(await hour.locator("figcaption").textContent()).toBe(`${made.admitted} admitted · ${made.refused} refused`);
    expect(await chartedMinutes(page)).toEqual(minutes.map((m) => ({ minute: m.minute, admitted: m.admitted, refused: m.refused })));
    expect(await hour.locator('.legend li[data-decision="rate_limited"]').getAttribute("data-count")).toBe(String(made.refused));
    expect(await hour.locator('.legend li[data-decision="admitted"]').getAttribute("data-count")).toBe(String(made.admitted));
    expect(await hour.locator("rect.seg.d-refused-0").count()).toBeGreaterThan(0);
    expect(await page.locator("figure").nth(1).locator("figcaption").textContent()).toBe(`${made.admitted} admitted · ${made.refused} refused`);
    expect(await page.locator("figure").nth(1).locator("g.slot").count()).toBeGreaterThanOrEqual(144);

    // The caller refused most: its count as GET /traffic/top-refused has it.
    const top = (await adminCall("GET", "/traffic/top-refused?minutes=60")).body as { callers: Array<{ caller: string; refused: number }> };
    expect(top.callers.find((c) => c.caller === made.caller)?.refused).toBe(made.refused);
    const row = page.locator("section", { hasText: "Callers refused most" }).getByRole("row", { name: new RegExp(made.caller) });
    expect(await row.locator("td").allTextContents()).toEqual([made.caller, made.tenant, String(made.refused), "exact"]);

    // Alerts: state and every attempt.
    const delivered = page.getByRole("row", { name: /rate_limit\.sustained/ }).filter({ hasText: made.tenant });
    expect(await delivered.locator(".badge").textContent()).toBe("delivered");
    expect(await delivered.locator("ol.attempts li").allTextContents()).toEqual([expect.stringMatching(/^#1 \d\d:\d\d UTC · http_500$/), expect.stringMatching(/^#2 \d\d:\d\d UTC · delivered$/)]);
    const failed = page.getByRole("row", { name: /block\.hit/ }).filter({ hasText: made.tenant });
    expect(await failed.locator(".badge").textContent()).toBe("failed");
    // The detail as labelled values (units from the field's name, counts grouped, ids as written), the body the webhook got folded beneath.
    const detail = delivered.locator(".alert-detail");
    expect(await detail.locator("dt").allTextContents()).toEqual(["category", "count", "window"]);
    expect(await detail.locator("dd").allTextContents()).toEqual(["request", "1,250", "60 s"]);
    expect(await failed.locator(".alert-detail dl").textContent()).toBe("block id1234");
    const raw = detail.locator("details.raw");
    expect(await raw.getAttribute("open")).toBeNull();
    expect(await raw.locator("pre").isVisible()).toBe(false);
    await raw.locator("summary").click();
    expect(JSON.parse((await raw.locator("pre").textContent()) ?? "")).toEqual({ id: alert.id, type: "rate_limit.sustained", at: expect.any(String), tenant: made.tenant, caller: made.caller, data: { category: "request", count: 1250, window_s: 60 } });
    await screenshot(page, "traffic-alert-detail");
    const listed = (await adminCall("GET", "/alerts?limit=20")).body as { alerts: Array<{ id: string; state: string; attempts: unknown[] }> };
    expect(listed.alerts.find((a) => a.id === alert.id)).toMatchObject({ state: "delivered", attempts: [{ attempt: 1, outcome: "http_500", status: 500 }, { attempt: 2, outcome: "delivered", status: 204 }] });
    expect(listed.alerts.find((a) => a.id === refusedAlert.id)).toMatchObject({ state: "failed" });

    await screenshot(page, "traffic");
    await screenshot(page, "traffic-viewport", { fullPage: false });

    await row.getByRole("link", { name: made.caller }).click();
    await page.getByRole("heading", { level: 1, name: `Explain ${made.caller}` }).waitFor();
    expect(await page.getByRole("row", { name: /request key its tenant's limits/ }).locator("td").nth(4).textContent()).toBe(`${made.admitted} per 60 s`);
    await finish(tab);
  });

  it("shows the same to the auditor, and fits a phone's width", async () => {
    const made = await makeRefusals("con-traffic-aud", 1, 4);
    const minutes = await refusalsRecorded(made);
    const tab = await openConsole(browser, PHONE);
    const { page } = tab;
    await signIn(page, gateway().auditorToken);
    await visit(page, `#/traffic?tenant=${made.tenant}`, `Traffic of ${made.tenant}`);
    expect(await chartedMinutes(page)).toEqual(minutes.map((m) => ({ minute: m.minute, admitted: m.admitted, refused: m.refused })));
    expect(await page.locator("figure").first().locator("figcaption").textContent()).toBe("1 admitted · 4 refused");
    await page.getByRole("link", { name: made.caller }).waitFor();
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(page, "traffic-phone");

    // Without a tenant: every tenant's traffic, this one's among it.
    await visit(page, "#/traffic", /^Traffic$/);
    const refusedNow = Number(await page.locator("figure").first().locator("[data-refused]").first().getAttribute("data-refused"));
    expect(refusedNow).toBeGreaterThanOrEqual(made.refused);
    await page.getByRole("link", { name: made.caller }).click();
    await page.getByRole("heading", { level: 1, name: `Explain ${made.caller}` }).waitFor();
    expect(await page.getByRole("button", { name: "Reset limiter state" }).isDisabled()).toBe(true);
    await finish(tab);
  });

  it("says what is wrong with a tenant that is not a slug, next to the field", async () => {
    const tab = await openConsole(browser);
    const { page } = tab;
    await signIn(page, gateway().adminToken);
    await visit(page, "#/traffic?tenant=Not_A_Slug", "Traffic of Not_A_Slug");
    const box = page.locator(".field", { has: page.getByLabel("Tenant", { exact: true }) });
    await box.locator(".field-error").waitFor();
    expect(await page.getByLabel("Tenant", { exact: true }).getAttribute("aria-invalid")).toBe("true");
    await finish(tab);
  });
});
