// The console as an operator trips over it (issue 30), in Debian's Chromium
// against the Worker: saving a tenant unchanged keeps every field its limits
// hold (read back through the API); the audit view's labelled details, block
// targets as written and keys as key:<id>; the usage chart's last month; the
// slug rule in words; signing in without a refused request. Screenshots of
// each go to test/e2e/screenshots/.
import type { Browser, Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_TESTS, arrange, type ConsoleTab, foreignRequests, launchChromium, openConsole, PHONE, screenshot, signIn, uniqueAddress, visit } from "./console-browser";
import { gateway, unique } from "./fixture";

let browser: Browser;
beforeAll(async () => {
  if (BROWSER_TESTS) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function signedIn(): Promise<ConsoleTab> {
  const tab = await openConsole(browser);
  await signIn(tab.page, gateway().adminToken);
  return tab;
}

async function finish(tab: ConsoleTab): Promise<void> {
  await tab.close();
  expect(foreignRequests(tab.requests)).toEqual([]);
  expect(tab.errors).toEqual([]);
}

const LIMITS = {
  request: {
    key: [{ count: 100, window_s: 60, burst: 150, scope: "global" }],
    jwt: [{ count: 5, window_s: 1 }],
    tenant: [{ count: 1000, window_s: 60, scope: "isolate" }, { count: 20000, window_s: 3600 }],
  },
  upload: { key: [{ count: 10, window_s: 3600 }] },
};

describe.runIf(BROWSER_TESTS)("the console keeps what it does not change", () => {
  it("saves a tenant's form unchanged without losing scope, burst, subjects, quota or org (read back through the API)", async () => {
    const org = unique("keep-org");
    const tenant = unique("keep");
    expect((await arrange("PUT", `/orgs/${org}`, { quota: {} })).status).toBe(201);
    const quota = { bytes: { soft: 800, hard: 1000 }, objects: { hard: 10 } };
    expect((await arrange("PUT", `/tenants/${tenant}`, { org, limits: LIMITS, quota })).status).toBe(201);
    const before = (await arrange("GET", `/tenants/${tenant}`)).body as Record<string, unknown>;

    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    // The scope column shows what is stored.
    expect(await page.getByLabel("Scope").first().inputValue()).toBe("global");
    await screenshot(page, "tenant-limits-scope");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved.").waitFor();
    const after = (await arrange("GET", `/tenants/${tenant}`)).body as Record<string, unknown>;
    expect(after.limits).toEqual(before.limits);
    expect(after.limits).toEqual(LIMITS);
    expect(after.quota).toEqual(quota);
    expect(after.org).toBe(org);

    // The "tenant as a whole" option shows whole in its select.
    const subject = page.getByLabel("Applies to").nth(2);
    expect(await subject.inputValue()).toBe("tenant");
    // The option's text measured in the select's own font, against the room the select gives it (less its arrow).
    const cut = await page.evaluate(`(() => {
      const select = document.querySelectorAll('select[name="subject"]')[2];
      const context = document.createElement("canvas").getContext("2d");
      context.font = getComputedStyle(select).font;
      return context.measureText(select.options[select.selectedIndex].text).width > select.clientWidth - 24;
    })()`);
    expect(cut).toBe(false);
    await finish(tab);
  });

  it("shows the API's refusal of a category nothing defines next to the category, and saves nothing", async () => {
    const tenant = unique("nameless");
    const limits = { request: { key: [{ count: 100, window_s: 60 }] } };
    expect((await arrange("PUT", `/tenants/${tenant}`, { limits })).status).toBe(201);
    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    // The limits editor's row (the budgets form has a Category field of its own).
    const row = page.locator(".limit-row").first();
    const category = row.getByLabel("Category");
    await category.fill("reqest");
    await page.getByRole("button", { name: "Save changes" }).click();
    const box = row.locator(".field", { has: page.getByLabel("Category") });
    await box.locator(".field-error").waitFor();
    expect(await box.locator(".field-error").textContent()).toBe("no category named reqest: one of message, request, stream_rent, upload");
    expect(await category.getAttribute("aria-invalid")).toBe("true");
    expect(await page.getByText("Saved.").count()).toBe(0);
    expect(((await arrange("GET", `/tenants/${tenant}`)).body as Record<string, unknown>).limits).toEqual(limits);
    await screenshot(page, "tenant-unknown-category");
    await finish(tab);
  });

  it("names the slug rule in words when a slug is not one", async () => {
    const tab = await signedIn();
    const { page } = tab;
    await page.getByLabel("Tenant slug").fill("Not A Slug");
    await page.getByRole("button", { name: "Create tenant" }).click();
    const error = page.locator(".field", { has: page.getByLabel("Tenant slug") }).locator(".field-error");
    await error.waitFor();
    expect(await error.textContent()).toContain("lower-case letters, digits, '.', '_' or '-'");
    expect(await error.textContent()).not.toContain("^[a-z0-9]");
    await finish(tab);
  });
});

describe.runIf(BROWSER_TESTS)("the audit view", () => {
  it("shows details as labelled fields, a block's target as written, and keys as key:<id> linking to explain", async () => {
    const tenant = unique("aud-view");
    const address = uniqueAddress();
    expect((await arrange("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const key = (await arrange("POST", `/tenants/${tenant}/keys`, { name: "audited" })).body as { id: string };
    expect((await arrange("POST", "/blocks", { target: `net:${address}/32`, reason: "audit view" })).status).toBe(201);

    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/audit?caller=${encodeURIComponent(`net:${address}/32`)}`, "Audit log");
    const row = page.locator("tbody tr").first();
    expect(await row.locator("td").nth(4).textContent()).toBe(`net:${address}/32`);
    const detail = row.locator("dl.detail");
    expect(await detail.locator("dt").allTextContents()).toEqual(expect.arrayContaining(["target", "reason", "expires at"]));
    expect(await detail.locator("dd").allTextContents()).toEqual(expect.arrayContaining(["audit view"]));
    await screenshot(page, "audit-block-target");

    await visit(page, `#/audit?tenant=${tenant}`, "Audit log");
    const minted = page.locator("tbody tr", { hasText: "key_minted" });
    const subject = minted.locator("td").nth(4).getByRole("link");
    expect(await subject.textContent()).toBe(`key:${key.id}`);
    await subject.click();
    await page.getByRole("heading", { level: 1, name: `Explain key:${key.id}` }).waitFor();
    await screenshot(page, "audit-key");
    await finish(tab);
  });
});

describe.runIf(BROWSER_TESTS)("quota sizes with units (issue 40 item 14)", () => {
  it("takes '2 GiB' and '1.5 GB', sends whole bytes, shows them back in those units beside the gauge, and refuses a size that is none next to its field", async () => {
    const tab = await signedIn();
    const { page } = tab;
    // A slug that sorts first, so the tenants list's first page shows it however many tenants other files made.
    const tenant = unique("0sizes");
    await page.getByLabel("Tenant slug").fill(tenant);
    await page.getByLabel("Bytes, hard").fill("2 GiB");
    await page.getByLabel("Bytes, soft").fill("1.5 GB");
    // What a size comes to, as it is typed; and which units the field takes.
    const hardBox = page.locator(".field", { has: page.getByLabel("Bytes, hard") });
    expect(await hardBox.locator(".size-reading").textContent()).toBe("= 2,147,483,648 bytes");
    expect(await page.getByText("Bytes: a number and a unit: B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024); a bare number is bytes.").first().isVisible()).toBe(true);
    await page.getByRole("button", { name: "Create tenant" }).click();
    await page.getByRole("heading", { level: 1, name: `Tenant ${tenant}` }).waitFor();
    expect(((await arrange("GET", `/tenants/${tenant}`)).body as { quota: unknown }).quota).toEqual({ bytes: { soft: 1_500_000_000, hard: 2_147_483_648 } });

    // Shown back as written, in the editor and beside the gauge.
    expect(await page.getByLabel("Bytes, hard").inputValue()).toBe("2 GiB");
    expect(await page.getByLabel("Bytes, soft").inputValue()).toBe("1.5 GB");
    const gauge = page.locator(".gauge", { hasText: "Stored bytes" });
    expect(await gauge.getByRole("meter").getAttribute("aria-valuetext")).toBe("0 B of 2 GiB (0%)");
    expect(await gauge.locator(".hint").textContent()).toBe("soft 1.5 GB · hard 2 GiB");
    await screenshot(page, "quota-units");

    // A size that is none: said next to its field, and nothing sent.
    const puts: string[] = [];
    page.on("request", (request) => {
      if (request.method() === "PUT") puts.push(request.url());
    });
    await page.getByLabel("Bytes, hard").fill("5 XB");
    expect(await hardBox.locator(".size-reading").textContent()).toBe("XB is not a unit: use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB");
    await page.getByRole("button", { name: "Save changes" }).click();
    await hardBox.locator(".field-error").waitFor();
    expect(await hardBox.locator(".field-error").textContent()).toBe("XB is not a unit: use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB");
    expect(await page.getByLabel("Bytes, hard").getAttribute("aria-invalid")).toBe("true");
    expect(puts).toEqual([]);
    // A bare number is bytes; a size the API refuses (soft above hard) is its message, next to the field.
    await page.getByLabel("Bytes, hard").fill("1000000000");
    await page.getByRole("button", { name: "Save changes" }).click();
    const softBox = page.locator(".field", { has: page.getByLabel("Bytes, soft") });
    await softBox.locator(".field-error").waitFor();
    expect(await softBox.locator(".field-error").textContent()).toBe("must be <= hard");
    await page.getByLabel("Bytes, soft").fill("800 MB");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved.").waitFor();
    expect(((await arrange("GET", `/tenants/${tenant}`)).body as { quota: unknown }).quota).toEqual({ bytes: { soft: 800_000_000, hard: 1_000_000_000 } });
    expect(await page.getByLabel("Bytes, hard").inputValue()).toBe("1 GB");

    await visit(page, "#/tenants", "Tenants");
    expect(await page.getByRole("row", { name: new RegExp(tenant) }).textContent()).toContain("bytes ≤ 1 GB (soft 800 MB)");
    await finish(tab);

    const phone = await openConsole(browser, PHONE);
    await signIn(phone.page, gateway().adminToken);
    await visit(phone.page, `#/tenants/${tenant}`, `Tenant ${tenant}`);
    expect(await phone.page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(phone.page, "quota-units-phone");
    await finish(phone);
  });
});

describe.runIf(BROWSER_TESTS)("the audit view, a page at a time", () => {
  it("shows 10 events a page on a phone (25 on a desktop), with the pager above and below, and goes older, newer and back to the newest", async () => {
    const tenant = unique("aud-pages");
    expect((await arrange("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    // 1 tenant_created and 26 key_minted: 27 events.
    for (let i = 0; i < 26; i++) expect((await arrange("POST", `/tenants/${tenant}/keys`, { name: `k${i}` })).status).toBe(201);

    const phone = await openConsole(browser, PHONE);
    await signIn(phone.page, gateway().adminToken);
    const { page } = phone;
    const rows = page.locator("tbody tr");
    await visit(page, `#/audit?tenant=${tenant}`, "Audit log");
    expect(await rows.count()).toBe(10);
    expect(await page.getByText("Events 1–10, 10 a page.").isVisible()).toBe(true);
    const above = page.getByRole("navigation", { name: "Pages, above the events" });
    const below = page.getByRole("navigation", { name: "Pages, below the events" });
    expect(await above.textContent()).toBe("Page 1Older");
    // A page at a phone's width is a few screens, not 9,470 px.
    const heightPx = Number(await page.evaluate("document.documentElement.scrollHeight"));
    expect(heightPx).toBeLessThan(4 * PHONE.height);
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await screenshot(page, "audit-pages-phone");
    await below.getByRole("link", { name: "Older" }).click();
    await page.getByText("Events 11–20, 10 a page.").waitFor();
    await below.getByRole("link", { name: "Older" }).click();
    await page.getByText("Events 21–27, 10 a page.").waitFor();
    expect(await rows.count()).toBe(7);
    expect(await below.textContent()).toBe("Page 3NewestNewer");
    expect(await rows.last().locator("td").nth(1).textContent()).toBe("tenant_created");
    await below.getByRole("link", { name: "Newer" }).click();
    await page.getByText("Events 11–20, 10 a page.").waitFor();
    expect(await below.textContent()).toBe("Page 2NewestOlder");
    await above.getByRole("link", { name: "Newest" }).click();
    await page.getByText("Events 1–10, 10 a page.").waitFor();
    await finish(phone);

    const desk = await signedIn();
    await visit(desk.page, `#/audit?tenant=${tenant}`, "Audit log");
    expect(await desk.page.locator("tbody tr").count()).toBe(25);
    expect(await desk.page.getByText("Events 1–25, 25 a page.").isVisible()).toBe(true);
    await screenshot(desk.page, "audit-pages");
    await finish(desk);
  });
});

describe.runIf(BROWSER_TESTS)("signing in and the usage chart", () => {
  it("signs in without a single refused request", async () => {
    const tab = await openConsole(browser);
    const refusedUrls: string[] = [];
    tab.page.on("response", (response: Response) => {
      if (response.status() >= 400) refusedUrls.push(`${response.status()} ${response.url()}`);
    });
    await tab.page.reload();
    await signIn(tab.page, gateway().adminToken);
    await tab.page.getByRole("heading", { level: 1, name: "Tenants" }).waitFor();
    await tab.page.reload();
    await tab.page.getByRole("heading", { level: 1, name: "Tenants" }).waitFor();
    expect(refusedUrls).toEqual([]);
    await finish(tab);
  });

  it("labels the last month of a usage chart and marks metered figures as possibly behind", async () => {
    const tenant = unique("chart");
    expect((await arrange("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/usage?tenant=${tenant}`, `Usage of ${tenant}`);
    const labels = await page.locator("figure.chart-box").first().locator("text.axis").allTextContents();
    const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    const now = new Date();
    expect(labels.at(-1)?.startsWith(months[now.getUTCMonth()] ?? "?")).toBe(true);
    expect(await page.getByText("may not be counted yet").first().isVisible()).toBe(true);
    expect(await page.getByText("Live, from the tenant's quota object").isVisible()).toBe(true);
    await screenshot(page, "usage-marked");
    await finish(tab);
  });
});
