// The console as an operator with the admin token uses it, in Debian's
// Chromium against the Worker under wrangler dev: sign in, create a tenant
// (and see the API's validation message next to the field), mint a key and
// read its secret once, set an override with an expiry, block an address,
// watch usage by month and the quota gauges, orgs and the audit log. Each
// view's screenshot goes to test/e2e/screenshots/.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_TESTS, arrange, type ConsoleTab, foreignRequests, launchChromium, openConsole, screenshot, sendUntilRecorded, signIn, uniqueAddress, visit } from "./console-browser";
import { gateway, unique } from "./fixture";

let browser: Browser;
let startedAtMs = 0;
beforeAll(async () => {
  startedAtMs = Date.now();
  if (BROWSER_TESTS) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  console.log(`console-admin: browser tests took ${((Date.now() - startedAtMs) / 1000).toFixed(1)} s`);
});

/** Closes the tab after checking it stayed on the gateway's own paths and logged no error (a CSP refusal among them). */
async function finish(tab: ConsoleTab): Promise<void> {
  await tab.close();
  expect(foreignRequests(tab.requests)).toEqual([]);
  expect(tab.errors).toEqual([]);
}

async function signedIn(): Promise<ConsoleTab> {
  const tab = await openConsole(browser);
  await signIn(tab.page, gateway().adminToken);
  return tab;
}

const thisMonth = () => new Date().toISOString().slice(0, 7);

describe.runIf(BROWSER_TESTS)("the console, signed in with the admin token", () => {
  it("exchanges the token for an HttpOnly, Secure, SameSite=Strict cookie on /_tollgate: nothing in web storage, the URL or script's reach", async () => {
    const tab = await openConsole(browser);
    await screenshot(tab.page, "sign-in");
    const beforeMs = Date.now();
    await signIn(tab.page, gateway().adminToken);
    await tab.page.getByRole("heading", { level: 1, name: "Tenants" }).waitFor();
    expect(await tab.page.locator(".who").textContent()).toContain("Admin");
    expect(tab.page.url()).not.toContain(gateway().adminToken);
    expect(tab.requests.some((url) => url.includes(gateway().adminToken))).toBe(false);
    expect(await tab.page.evaluate("sessionStorage.length + localStorage.length")).toBe(0);
    // HttpOnly: script sees no cookie at all.
    expect(await tab.page.evaluate("document.cookie")).toBe("");
    // Chromium treats http://127.0.0.1 as a secure context, so it keeps a Secure cookie there.
    const cookies = await tab.context.cookies();
    expect(cookies.map(({ name, path, httpOnly, secure, sameSite }) => ({ name, path, httpOnly, secure, sameSite }))).toEqual([
      { name: "tollgate_console", path: "/_tollgate", httpOnly: true, secure: true, sameSite: "Strict" },
    ]);
    const [cookie] = cookies;
    expect(cookie?.value).not.toContain(gateway().adminToken);
    const lifetimeS = (cookie?.expires ?? 0) - beforeMs / 1000;
    expect(lifetimeS).toBeGreaterThan(12 * 3600 - 120);
    expect(lifetimeS).toBeLessThanOrEqual(12 * 3600 + 5);

    // The cookie is not sent to the data plane: a page the origin serves never sees it.
    const tag = unique("no-cookie");
    await tab.page.evaluate(`fetch("/objects/${tag}", { headers: { "x-test-tag": "${tag}" } }).then((r) => r.text())`);
    const seen = (await (await fetch(`${gateway().originUrl}/__origin/requests?tag=${tag}`)).json()) as Array<{ headers: Record<string, string> }>;
    expect(seen.length).toBe(1);
    expect(seen[0]?.headers.cookie).toBeUndefined();
    tab.requests.splice(tab.requests.findIndex((url) => url.endsWith(`/objects/${tag}`)), 1);

    await tab.page.reload();
    await tab.page.getByRole("heading", { level: 1, name: "Tenants" }).waitFor();
    await tab.page.getByRole("button", { name: "Sign out" }).click();
    await tab.page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    expect(await tab.context.cookies()).toEqual([]);
    await tab.page.reload();
    await tab.page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await finish(tab);
  });

  it("creates a tenant, showing the API's validation message next to the field it names", async () => {
    const tab = await signedIn();
    const { page } = tab;
    const tenant = unique("con-tenant");
    await page.getByLabel("Tenant slug").fill(tenant);
    await page.getByLabel("Bytes, hard").fill("100000");
    await page.getByLabel("Objects, hard").fill("10");
    await page.getByRole("button", { name: "Add a limit" }).click();
    await page.getByLabel("Count", { exact: true }).fill("0");
    await page.getByLabel("Window (s)").fill("60");
    await page.getByRole("button", { name: "Create tenant" }).click();

    const count = page.getByLabel("Count", { exact: true });
    await page.locator(".field-error").waitFor();
    expect(await count.getAttribute("aria-invalid")).toBe("true");
    const countBox = page.locator(".field", { has: count });
    expect(await countBox.locator(".field-error").textContent()).toBe("must be > 0");
    expect((await arrange("GET", `/tenants/${tenant}`)).status).toBe(404);
    await screenshot(page, "tenants-validation");

    await count.fill("100");
    await page.getByRole("button", { name: "Create tenant" }).click();
    await page.getByRole("heading", { level: 1, name: `Tenant ${tenant}` }).waitFor();
    expect((await arrange("GET", `/tenants/${tenant}`)).body).toMatchObject({
      tenant,
      limits: { request: { key: [{ count: 100, window_s: 60 }] } },
      quota: { bytes: { hard: 100000 }, objects: { hard: 10 } },
    });
    await screenshot(page, "tenant");

    // Editing: a soft quota above the hard one is refused next to the soft field; nothing changes.
    await page.getByLabel("Bytes, soft").fill("200000");
    await page.getByRole("button", { name: "Save changes" }).click();
    const soft = page.locator(".field", { has: page.getByLabel("Bytes, soft") });
    await soft.locator(".field-error").waitFor();
    expect(await soft.locator(".field-error").textContent()).toBe("must be <= hard");
    await page.getByLabel("Bytes, soft").fill("80000");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved.").waitFor();
    expect((await arrange("GET", `/tenants/${tenant}`)).body).toMatchObject({ quota: { bytes: { soft: 80000, hard: 100000 } } });

    await visit(page, "#/tenants", "Tenants");
    await page.getByRole("link", { name: tenant }).waitFor();
    await screenshot(page, "tenants");
    await finish(tab);
  });

  it("mints a key, shows its secret once with a copy button, lists its use, and revokes it after asking", async () => {
    const tenant = unique("con-keys");
    expect((await arrange("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const tab = await signedIn();
    const { page } = tab;
    await tab.context.grantPermissions(["clipboard-read", "clipboard-write"]);
    await visit(page, `#/keys?tenant=${tenant}`, `Keys of ${tenant}`);
    await page.getByLabel("Name", { exact: true }).fill("billing service");
    await page.getByRole("button", { name: "Mint key" }).click();
    const secret = (await page.locator("[data-secret]").textContent()) ?? "";
    expect(secret).toMatch(/^tg_[0-9a-z]{12}_/);
    await screenshot(page, "keys-minted");
    await page.getByRole("button", { name: "Copy key" }).click();
    await page.getByText("Copied.").waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(secret);

    await page.getByRole("button", { name: "Done, hide the secret" }).click();
    expect(await page.locator("[data-secret]").count()).toBe(0);
    // The secret works; its uses reach D1 with a later flush, and the listing shows them, never the secret again.
    const uses = async () => ((await arrange("GET", `/tenants/${tenant}/keys`)).body as { keys: Array<{ use_count: number }> }).keys[0]?.use_count ?? 0;
    const sent = await sendUntilRecorded(secret, async (n) => (await uses()) === n);
    await page.reload();
    await page.getByRole("heading", { level: 1, name: `Keys of ${tenant}` }).waitFor();
    const row = page.getByRole("row", { name: /billing service/ });
    expect(await row.textContent()).toContain("active");
    expect(await row.locator("td").nth(5).textContent()).not.toBe("never");
    expect(await row.locator("td").nth(6).textContent()).toBe(String(sent));
    expect(await page.content()).not.toContain(secret);
    await screenshot(page, "keys");

    // Revoking asks first: Cancel keeps the key.
    await row.getByRole("button", { name: "Revoke key billing service" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect((await fetch(`${gateway().gatewayUrl}/hello`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    await row.getByRole("button", { name: "Revoke key billing service" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revoke key" }).click();
    await page.getByText("Revoked billing service.").waitFor();
    expect(await page.getByRole("row", { name: /billing service/ }).textContent()).toContain("revoked");
    expect((await fetch(`${gateway().gatewayUrl}/hello`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401);

    // A tenant that does not exist is said so under the picker, which stays to choose another.
    const missing = unique("con-missing");
    await visit(page, `#/keys?tenant=${missing}`, "Keys");
    expect(await page.getByRole("alert").textContent()).toBe(`No tenant named ${missing}.`);
    expect(await page.getByLabel("Tenant", { exact: true }).inputValue()).toBe(missing);
    await finish(tab);
  });

  it("sets an override for an hour with a reason, lists it active, and removes it", async () => {
    const caller = `ip:${uniqueAddress()}`;
    const tab = await signedIn();
    const { page } = tab;
    await visit(page, "#/overrides", "Overrides");
    await page.getByLabel("Caller key").fill(caller);
    await page.getByRole("button", { name: "Add a limit" }).click();
    await page.getByLabel("Count", { exact: true }).fill("5000");
    await page.getByLabel("Window (s)").fill("60");
    expect(await page.getByLabel("Expires").inputValue()).toBe("1h");
    await page.getByLabel("Reason").fill("launch day");
    const beforeMs = Date.now();
    await page.getByRole("button", { name: "Set override" }).click();
    await page.getByText(`Override for ${caller} set.`).waitFor();

    const stored = (await arrange("GET", `/overrides/${caller}`)).body as { expires_at: string; reason: string; active: boolean; limits: unknown };
    expect(stored).toMatchObject({ reason: "launch day", active: true, limits: { request: [{ count: 5000, window_s: 60 }] } });
    expect(Date.parse(stored.expires_at) - beforeMs).toBeGreaterThan(55 * 60_000);
    expect(Date.parse(stored.expires_at) - beforeMs).toBeLessThan(65 * 60_000);
    const row = page.getByRole("row", { name: new RegExp(caller.replaceAll(".", "\\.")) });
    expect(await row.textContent()).toContain("launch day");
    expect(await row.textContent()).toContain("active");
    expect(await row.textContent()).toContain(stored.expires_at.slice(0, 16).replace("T", " "));
    await screenshot(page, "overrides");

    await row.getByRole("button", { name: `Remove the override for ${caller}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove override" }).click();
    await page.getByText(`Override for ${caller} removed.`).waitFor();
    expect((await arrange("GET", `/overrides/${caller}`)).status).toBe(404);
    await finish(tab);
  });

  it("blocks an address for a day with a reason, and shows the API's message for a bad target", async () => {
    const address = uniqueAddress();
    const tab = await signedIn();
    const { page } = tab;
    await visit(page, "#/blocks", "Blocks");
    await page.getByLabel("Target").fill(`ip:${address}/24`);
    await page.getByRole("button", { name: "Block", exact: true }).click();
    const target = page.locator(".field", { has: page.getByLabel("Target") });
    await target.locator(".field-error").waitFor();
    expect(await target.locator(".field-error").textContent()).toBe("is not a valid ip:<address>");

    await page.getByLabel("Target").fill(`ip:${address}`);
    await page.getByLabel("Reason").fill("credential stuffing");
    await page.getByRole("button", { name: "Block", exact: true }).click();
    await page.getByText(`Blocked ip:${address}.`).waitFor();
    const blocks = ((await arrange("GET", "/blocks?limit=200")).body as { blocks: Array<{ target: string; expires_at: string; reason: string; active: boolean }> }).blocks;
    const block = blocks.find((b) => b.target === `ip:${address}`);
    expect(block).toMatchObject({ reason: "credential stuffing", active: true });
    expect(Date.parse(block?.expires_at ?? "") - Date.now()).toBeGreaterThan(23 * 3600_000);
    const row = page.getByRole("row", { name: new RegExp(`ip:${address.replaceAll(".", "\\.")}\\b`) });
    expect(await row.textContent()).toContain("credential stuffing");
    await screenshot(page, "blocks");
    await finish(tab);
  });

  it("draws the tenant's usage by month and its quota gauges from real traffic", async () => {
    const tenant = unique("con-usage");
    await arrange("PUT", `/tenants/${tenant}`, { quota: { bytes: { soft: 80_000, hard: 100_000 }, objects: { hard: 10 } } });
    const key = ((await arrange("POST", `/tenants/${tenant}/keys`, { name: "traffic" })).body as { key: string }).key;
    const auth = { authorization: `Bearer ${key}` };
    const upload = await fetch(`${gateway().gatewayUrl}/objects/${unique("obj")}`, { method: "PUT", headers: { ...auth, "content-type": "application/octet-stream" }, body: new Uint8Array(2500) });
    expect(upload.status).toBe(200);
    const requests = async () => {
      const res = await fetch(`${gateway().gatewayUrl}/_tollgate/admin/v1/usage/export?format=ndjson&tenant=${tenant}`, { headers: { authorization: `Bearer ${gateway().auditorToken}` } });
      const rows = (await res.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line) as { metric: string; value: number });
      return rows.find((r) => r.metric === "requests")?.value ?? 0;
    };
    const sent = await sendUntilRecorded(key, async (n) => (await requests()) === n, 1);

    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/usage?tenant=${tenant}`, `Usage of ${tenant}`);
    const bytes = page.getByRole("meter", { name: "Stored bytes" });
    expect(await bytes.getAttribute("aria-valuenow")).toBe("2500");
    expect(await bytes.getAttribute("aria-valuemax")).toBe("100000");
    expect(await page.locator(".gauge", { hasText: "Stored bytes" }).textContent()).toContain("2.5 kB of 100 kB (3%)");
    expect(await page.getByRole("meter", { name: "Stored objects" }).getAttribute("aria-valuetext")).toBe("1 of 10 (10%)");
    const bar = page.locator("figure", { hasText: "Requests" }).first().locator(`rect[data-period="${thisMonth()}"]`);
    expect(await bar.getAttribute("data-value")).toBe(String(sent));
    expect(Number(await bar.getAttribute("height"))).toBeGreaterThan(0);
    expect(await page.locator("figure").count()).toBe(3);
    await screenshot(page, "usage");
    await screenshot(page, "usage-viewport", { fullPage: false });

    // Without a tenant: a requests chart for each of the busiest tenants (other e2e files meter too).
    await visit(page, "#/usage", "Usage");
    await page.locator("figure").first().waitFor();
    expect(await page.locator("figure").count()).toBeLessThanOrEqual(12);
    const chart = page.locator("figure", { hasText: tenant });
    if ((await chart.count()) === 1) expect(await chart.locator(`rect[data-period="${thisMonth()}"]`).getAttribute("data-value")).toBe(String(sent));
    await screenshot(page, "usage-all");
    await finish(tab);
  });

  it("creates an org, saves its quota, and says why it cannot be deleted while a tenant names it", async () => {
    const org = unique("con-org");
    const tab = await signedIn();
    const { page } = tab;
    await visit(page, "#/orgs", "Orgs");
    await page.getByLabel("Org slug").fill(org);
    await page.getByLabel("Bytes, hard").fill("1000000");
    await page.getByRole("button", { name: "Create org" }).click();
    await page.getByRole("heading", { level: 1, name: `Org ${org}` }).waitFor();
    const tenant = unique("con-member");
    expect((await arrange("PUT", `/tenants/${tenant}`, { org })).status).toBe(201);

    await page.getByLabel("Objects, hard").fill("500");
    await page.getByRole("button", { name: "Save quota" }).click();
    await page.getByText("Quota saved.").waitFor();
    expect((await arrange("GET", `/orgs/${org}`)).body).toMatchObject({ quota: { bytes: { hard: 1000000 }, objects: { hard: 500 } }, tenants: [tenant] });
    await page.getByRole("link", { name: tenant }).waitFor();
    await screenshot(page, "org");

    await page.getByRole("button", { name: "Delete org" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete org" }).click();
    await page.getByText("still has 1 tenant(s)").waitFor();
    expect((await arrange("GET", `/orgs/${org}`)).status).toBe(200);
    await visit(page, "#/orgs", "Orgs");
    await screenshot(page, "orgs");
    await finish(tab);
  });

  it("explains a key's caller — limits with their source and state, override, block — and resets its state", async () => {
    const tenant = unique("con-explain");
    await arrange("PUT", `/tenants/${tenant}`, { limits: { request: { key: [{ count: 7, window_s: 60 }] } } });
    const key = (await arrange("POST", `/tenants/${tenant}/keys`, { name: "explained" })).body as { id: string; key: string };
    for (let i = 0; i < 2; i += 1) expect((await fetch(`${gateway().gatewayUrl}/hello`, { headers: { authorization: `Bearer ${key.key}` } })).status).toBe(200);
    const caller = `key:${key.id}`;

    const tab = await signedIn();
    const { page } = tab;
    await visit(page, "#/explain", "Explain a caller");
    await page.getByLabel("Caller key").fill(caller);
    await page.getByRole("button", { name: "Explain", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: `Explain ${caller}` }).waitFor();
    const keyRow = page.getByRole("row", { name: /request key its tenant's limits/ });
    expect(await keyRow.locator("td").allTextContents()).toEqual(["request", "key", "its tenant's limits", "isolate", "7 per 60 s", "5", expect.stringMatching(/s$/)]);
    expect(await page.getByText("Not blocked.").count()).toBe(1);
    await screenshot(page, "explain");

    await page.getByRole("button", { name: "Reset limiter state" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Reset state" }).click();
    await page.getByText(`Limiter state of ${caller} reset.`).waitFor();
    expect(await page.getByRole("row", { name: /request key its tenant's limits/ }).locator("td").nth(5).textContent()).toBe("7");

    await arrange("PUT", `/overrides/${caller}`, { limits: { request: [{ count: 50, window_s: 60 }] }, reason: "trusted partner" });
    await arrange("POST", "/blocks", { target: `tenant:${tenant}`, reason: "unpaid invoice" });
    await page.reload();
    await page.getByRole("heading", { level: 1, name: `Explain ${caller}` }).waitFor();
    expect(await page.getByRole("row", { name: /request key an override for this caller/ }).locator("td").nth(4).textContent()).toBe("50 per 60 s");
    expect(await page.locator("section", { hasText: "Override" }).last().textContent()).toContain("trusted partner");
    expect(await page.locator(".notice.error").textContent()).toContain(`Blocked: tenant:${tenant}`);
    await screenshot(page, "explain-blocked");
    await finish(tab);
  });

  it("pages through the audit log with next_cursor, newest first", async () => {
    const tenant = unique("con-audit");
    await arrange("PUT", `/tenants/${tenant}`, {});
    const minted = (await arrange("POST", `/tenants/${tenant}/keys`, { name: "audited" })).body as { id: string };
    await arrange("DELETE", `/keys/${minted.id}`);
    const tab = await signedIn();
    const { page } = tab;
    await visit(page, `#/audit?tenant=${tenant}&limit=2`, "Audit log");
    const kinds = async () => page.locator("tbody tr td:nth-child(2)").allTextContents();
    expect(await kinds()).toEqual(["key_revoked", "key_minted"]);
    await screenshot(page, "audit");
    const below = page.getByRole("navigation", { name: "Pages, below the events" });
    await below.getByRole("link", { name: "Older" }).click();
    await expect.poll(kinds).toEqual(["tenant_created"]);
    expect(await below.getByRole("link", { name: "Older" }).count()).toBe(0);
    await below.getByRole("link", { name: "Newest" }).click();
    await expect.poll(kinds).toEqual(["key_revoked", "key_minted"]);
    await finish(tab);
  });
});
