// What the console must never do, in Debian's Chromium against the Worker
// under wrangler dev: serve a file without its strict CSP or outside
// /_tollgate/console, reach anything but the gateway's own console and admin
// paths, let a wrong token in or echo it, offer the auditor a write, render
// data as markup, overflow a phone's width, or need a mouse.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_TESTS, arrange, CONSOLE_PATH, type ConsoleTab, foreignRequests, launchChromium, openConsole, PHONE, screenshot, signIn, uniqueAddress, visit } from "./console-browser";
import { gateway, unique } from "./fixture";

let browser: Browser;
let startedAtMs = 0;
beforeAll(async () => {
  startedAtMs = Date.now();
  if (BROWSER_TESTS) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  console.log(`console-guard: browser tests took ${((Date.now() - startedAtMs) / 1000).toFixed(1)} s`);
});

async function finish(tab: ConsoleTab): Promise<void> {
  await tab.close();
  expect(foreignRequests(tab.requests)).toEqual([]);
  expect(tab.errors).toEqual([]);
}

/** One of everything, so every view has rows and their write buttons. */
async function arrangeOneOfEach(): Promise<{ tenant: string; org: string; keyId: string; address: string }> {
  const org = unique("guard-org");
  const tenant = unique("guard");
  const address = uniqueAddress();
  expect((await arrange("PUT", `/orgs/${org}`, { quota: { bytes: { hard: 1_000_000 } } })).status).toBe(201);
  expect((await arrange("PUT", `/tenants/${tenant}`, { org, quota: { bytes: { hard: 1000 } } })).status).toBe(201);
  const key = (await arrange("POST", `/tenants/${tenant}/keys`, { name: "guard key" })).body as { id: string };
  expect((await arrange("PUT", `/overrides/ip:${address}`, { limits: { request: [{ count: 9, window_s: 1 }] }, reason: "guard" })).status).toBe(201);
  expect((await arrange("POST", "/blocks", { target: `ip:${address}`, reason: "guard" })).status).toBe(201);
  return { tenant, org, keyId: key.id, address };
}

/** Every view, with whether it has write controls for the admin. */
function everyView(a: { tenant: string; org: string; keyId: string }): Array<{ name: string; hash: string; heading: string | RegExp; writes: boolean }> {
  return [
    { name: "tenants", hash: "#/tenants", heading: "Tenants", writes: true },
    { name: "tenant", hash: `#/tenants/${a.tenant}`, heading: `Tenant ${a.tenant}`, writes: true },
    { name: "keys", hash: `#/keys?tenant=${a.tenant}`, heading: `Keys of ${a.tenant}`, writes: true },
    { name: "overrides", hash: "#/overrides", heading: "Overrides", writes: true },
    { name: "blocks", hash: "#/blocks", heading: "Blocks", writes: true },
    { name: "explain", hash: `#/explain?caller=key:${a.keyId}`, heading: `Explain key:${a.keyId}`, writes: true },
    { name: "usage", hash: `#/usage?tenant=${a.tenant}`, heading: `Usage of ${a.tenant}`, writes: false },
    { name: "orgs", hash: "#/orgs", heading: "Orgs", writes: true },
    { name: "org", hash: `#/orgs/${a.org}`, heading: `Org ${a.org}`, writes: true },
    { name: "audit", hash: "#/audit", heading: "Audit log", writes: false },
    { name: "traffic", hash: `#/traffic?tenant=${a.tenant}`, heading: `Traffic of ${a.tenant}`, writes: false },
    { name: "accuracy", hash: "#/accuracy", heading: "Accuracy: global limits and leased budgets", writes: false },
  ];
}

/** [write controls, of which enabled]; `:disabled` also covers those inside a disabled fieldset. */
async function writeControls(page: Page): Promise<[number, number]> {
  return page.evaluate(`(() => {
    const controls = [...document.querySelectorAll("main [data-write], main [data-write] button, main [data-write] input, main [data-write] select")];
    return [controls.length, controls.filter((c) => !c.matches(":disabled")).length];
  })()`);
}

describe("serving the console", () => {
  it("answers every console file with the strict CSP, and 404 for anything else", async () => {
    const base = `${gateway().gatewayUrl}${CONSOLE_PATH}`;
    const files: Array<[string, string]> = [
      ["", "text/html"],
      ["/", "text/html"],
      ["/app.js", "javascript"],
      ["/views/tenants.js", "javascript"],
      ["/console.css", "text/css"],
      ["/favicon.svg", "image/svg+xml"],
    ];
    for (const [path, type] of files) {
      const res = await fetch(base + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toContain(type);
      const csp = res.headers.get("content-security-policy") ?? "";
      for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "require-trusted-types-for 'script'", "form-action 'none'"]) {
        expect(csp, path).toContain(directive);
      }
      expect(csp, path).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
      expect(res.headers.get("referrer-policy"), path).toBe("no-referrer");
    }
    const html = await (await fetch(base)).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);

    for (const path of ["/nope.js", "/.assetsignore", "/views/", "/tsconfig.json"]) {
      const res = await fetch(base + path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("content-type"), path).toBe("application/problem+json");
    }
    expect((await fetch(`${base}/app.js`, { method: "POST" })).status).toBe(404);
  });

  it("never serves a console file outside /_tollgate/console: /app.js is the data plane's, forwarded to the origin", async () => {
    const tag = unique("assets");
    const res = await fetch(`${gateway().gatewayUrl}/app.js`, { headers: { "x-test-tag": tag } });
    expect(res.headers.get("content-security-policy")).toBeNull();
    expect(await res.text()).not.toContain("startSession");
    const seen = (await (await fetch(`${gateway().originUrl}/__origin/requests?tag=${tag}`)).json()) as Array<{ path: string }>;
    expect(seen.map((r) => r.path)).toEqual(["/app.js"]);
  });
});

describe.runIf(BROWSER_TESTS)("signing in", () => {
  it("tells a wrong token so, without echoing it, and keeps nothing", async () => {
    const tab = await openConsole(browser);
    const { page } = tab;
    const wrong = `wrong-${unique("token")}-0123456789abcdef`;
    await page.getByLabel("Admin or auditor token").fill(wrong);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").getByText("That token was not accepted.").waitFor();
    expect(await page.content()).not.toContain(wrong);
    expect(await page.getByLabel("Admin or auditor token").inputValue()).toBe("");
    expect(await page.evaluate("sessionStorage.length + localStorage.length")).toBe(0);
    expect(await tab.context.cookies()).toEqual([]);
    expect(await page.getByRole("navigation", { name: "Console" }).isVisible()).toBe(false);
    expect(page.url()).not.toContain(wrong);
    await screenshot(page, "sign-in-refused");
    await finish(tab);
  });
});

describe.runIf(BROWSER_TESTS)("the auditor token", () => {
  it("sees every view with every write control disabled", async () => {
    const arranged = await arrangeOneOfEach();
    const tab = await openConsole(browser);
    const { page } = tab;
    await signIn(page, gateway().auditorToken);
    expect(await page.locator(".who").textContent()).toContain("Auditor · read-only");
    for (const view of everyView(arranged)) {
      await visit(page, view.hash, view.heading);
      const [controls, enabled] = await writeControls(page);
      if (view.writes) expect(controls, view.name).toBeGreaterThan(0);
      expect(enabled, view.name).toBe(0);
      await screenshot(page, `auditor-${view.name}`);
    }
    // The rows are there to read: the auditor sees everything.
    await visit(page, "#/blocks", "Blocks");
    await page.getByRole("row", { name: new RegExp(`ip:${arranged.address.replaceAll(".", "\\.")}\\b`) }).waitFor();
    await finish(tab);
  });

  it("and the admin token gets those same controls enabled", async () => {
    const arranged = await arrangeOneOfEach();
    const tab = await openConsole(browser);
    await signIn(tab.page, gateway().adminToken);
    for (const view of everyView(arranged).filter((v) => v.writes)) {
      await visit(tab.page, view.hash, view.heading);
      const [controls, enabled] = await writeControls(tab.page);
      expect(controls, view.name).toBeGreaterThan(0);
      expect(enabled, view.name).toBeGreaterThan(0);
    }
    await finish(tab);
  });
});

describe.runIf(BROWSER_TESTS)("data from the API", () => {
  it("renders hostile names and reasons as text, never as markup", async () => {
    const tenant = unique("hostile");
    const address = uniqueAddress();
    const keyName = `<img src=x onerror="window.__pwned='key'">`;
    const overrideReason = `<script>window.__pwned='override'</script>`;
    const blockReason = `</td><script>window.__pwned='block'</script><b>bold</b>`;
    await arrange("PUT", `/tenants/${tenant}`, {});
    await arrange("POST", `/tenants/${tenant}/keys`, { name: keyName });
    await arrange("PUT", `/overrides/ip:${address}`, { limits: {}, reason: overrideReason });

    const tab = await openConsole(browser);
    const { page } = tab;
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await signIn(page, gateway().adminToken);
    // The block's reason goes in through the console's own form.
    await visit(page, "#/blocks", "Blocks");
    await page.getByLabel("Target").fill(`ip:${address}`);
    await page.getByLabel("Reason").fill(blockReason);
    await page.getByRole("button", { name: "Block", exact: true }).click();
    await page.getByText(blockReason).waitFor();

    const injected = async () => page.evaluate(`[document.querySelectorAll("main script, main img, main b").length, typeof window.__pwned]`);
    expect(await injected()).toEqual([0, "undefined"]);
    await screenshot(page, "hostile-blocks");
    await visit(page, "#/overrides", "Overrides");
    await page.getByText(overrideReason).waitFor();
    expect(await injected()).toEqual([0, "undefined"]);
    await visit(page, `#/keys?tenant=${tenant}`, `Keys of ${tenant}`);
    await page.getByRole("cell", { name: keyName, exact: true }).waitFor();
    expect(await injected()).toEqual([0, "undefined"]);
    // The confirmation dialog names the key: as text too.
    await page.getByRole("button", { name: `Revoke key ${keyName}` }).click();
    await page.getByRole("dialog").getByText(keyName).first().waitFor();
    expect(await injected()).toEqual([0, "undefined"]);
    await page.keyboard.press("Escape");
    await visit(page, `#/audit?caller=ip:${address}`, "Audit log");
    await page.getByText(JSON.stringify(blockReason).slice(1, -1)).first().waitFor();
    expect(await injected()).toEqual([0, "undefined"]);
    await screenshot(page, "hostile-audit");
    expect(dialogs).toEqual([]);
    await finish(tab);
  });
});

describe.runIf(BROWSER_TESTS)("reading and moving around", () => {
  it("fits a phone's width on every view: table rows stack as cards, the page never scrolls sideways", async () => {
    const arranged = await arrangeOneOfEach();
    const tab = await openConsole(browser, PHONE);
    const { page } = tab;
    await screenshot(page, "phone-sign-in");
    await signIn(page, gateway().adminToken);
    for (const view of everyView(arranged)) {
      await visit(page, view.hash, view.heading);
      expect(await page.evaluate("document.documentElement.scrollWidth"), view.name).toBeLessThanOrEqual(PHONE.width);
      await screenshot(page, `phone-${view.name}`);
    }
    await finish(tab);
  });

  it("labels every control of every view", async () => {
    const arranged = await arrangeOneOfEach();
    const tab = await openConsole(browser);
    await signIn(tab.page, gateway().adminToken);
    for (const view of everyView(arranged)) {
      await visit(tab.page, view.hash, view.heading);
      const unlabelled = await tab.page.evaluate(`[...document.querySelectorAll("input, select, button, a[href]")]
        .filter((c) => !c.closest("[hidden]") && !c.hidden)
        .filter((c) => !((c.labels && c.labels.length > 0) || c.getAttribute("aria-label") || (c.textContent ?? "").trim() !== ""))
        .map((c) => c.outerHTML)`);
      expect(unlabelled, view.name).toEqual([]);
    }
    await finish(tab);
  });

  it("works from the keyboard: sign in, the menu, a confirmation that Escape cancels", async () => {
    const address = uniqueAddress();
    await arrange("POST", "/blocks", { target: `ip:${address}`, reason: "keyboard" });
    const tab = await openConsole(browser);
    const { page } = tab;
    /** `TAG:name` of the focused element. */
    const focused = async () => page.evaluate(`(() => { const e = document.activeElement; return e ? e.tagName + ":" + (e.getAttribute("aria-label") || e.textContent || "").trim() : ""; })()`);
    // The token field has the focus once the page has asked whether a session is live; Enter signs in, and the first page's heading takes the focus.
    await page.getByLabel("Admin or auditor token").waitFor();
    expect(await focused()).toBe("INPUT:");
    await page.keyboard.type(gateway().adminToken);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Tenants" }).waitFor();
    expect(await focused()).toBe("H1:Tenants");

    // From the top of a fresh load, the skip link comes first and jumps to the heading.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Tenants" }).waitFor();
    await page.keyboard.press("Tab");
    expect(await focused()).toBe("A:Skip to content");
    await page.keyboard.press("Enter");
    expect(await focused()).toBe("H1:Tenants");
    // Back up into the menu, and along it.
    for (let i = 0; i < 12 && (await focused()) !== "A:Blocks"; i += 1) await page.keyboard.press("Shift+Tab");
    expect(await focused()).toBe("A:Blocks");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Blocks" }).waitFor();
    expect(await focused()).toBe("H1:Blocks"); // a navigation moves the focus to the new page's heading

    const remove = page.getByRole("button", { name: `Remove the block of ip:${address}` });
    await remove.focus();
    await page.keyboard.press("Enter");
    await page.getByRole("dialog").waitFor();
    expect(await focused()).toBe("BUTTON:Cancel");
    await page.keyboard.press("Escape");
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect(await focused()).toBe(`BUTTON:Remove the block of ip:${address}`);
    expect((await arrange("GET", "/blocks?limit=200")).body).toMatchObject({ blocks: expect.arrayContaining([expect.objectContaining({ target: `ip:${address}` })]) });
    await finish(tab);
  });
});
