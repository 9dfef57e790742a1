// The console in a real browser: Debian's Chromium (`apt-get install
// chromium`; Playwright's own browser download cannot be reached here) driven
// by playwright-core, against the gateway the e2e project started.
//
// Each test gets a fresh browser context (its own session cookie, storage and
// cache), and the page records every request it makes and every error it
// logs, so a test can assert that nothing leaves the gateway's own console
// and admin paths and that the CSP refused nothing.
import { randomInt } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { adminCall, gateway } from "./fixture";
import { withStartSlot } from "./start-slots";

/** Debian's package puts it here; CHROMIUM_PATH overrides (another distribution, a local build). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/**
 * What this closed network needs: without the background-networking flags
 * Chromium keeps dialling Google's hosts. Playwright's launch() adds a fresh
 * temporary --user-data-dir itself (and refuses one in `args`).
 */
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export const DESKTOP = { width: 1280, height: 800 } as const;
export const PHONE = { width: 375, height: 812 } as const;

/** Screenshots for people to look at; git-ignored. */
export const SCREENSHOT_DIR = join(dirname(fileURLToPath(import.meta.url)), "screenshots");

export const CONSOLE_PATH = "/_tollgate/console";

/**
 * Whether the browser tests run. Chromium is not on a fresh machine of this
 * kind and needs root to install, so without it (and without
 * TOLLGATE_REQUIRE_BROWSER=1, which .ci/run sets after installing it) they
 * are skipped with a notice, and `npm install && npm test` still passes.
 */
export const BROWSER_TESTS = existsSync(CHROMIUM_PATH) || process.env.TOLLGATE_REQUIRE_BROWSER === "1";
if (!BROWSER_TESTS) {
  console.warn(`\n⚠ The console's browser tests are skipped: no Chromium at ${CHROMIUM_PATH}. Install Debian's package (apt-get install -y chromium) or set CHROMIUM_PATH to run them; .ci/run does.\n`);
}

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: install Debian's package (apt-get install -y chromium; .ci/run does) or set CHROMIUM_PATH.`);
  }
  // One of the start slots (./start-slots.ts): several files launch a browser at the start of the run.
  return withStartSlot("browser", () => chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 }));
}

export interface ConsoleTab {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Every URL the page requested, in order. */
  readonly requests: string[];
  /** Uncaught exceptions and console errors other than a failed fetch's status line. */
  readonly errors: string[];
  close(): Promise<void>;
}

/** A fresh context and page on the console's sign-in screen; `gatewayUrl` for a gateway a file started itself. */
export async function openConsole(browser: Browser, viewport: { width: number; height: number } = DESKTOP, gatewayUrl = gateway().gatewayUrl): Promise<ConsoleTab> {
  const context = await browser.newContext({ viewport, baseURL: gatewayUrl });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000); // room for a busy CI machine: it only matters when a step fails
  const requests: string[] = [];
  const errors: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    // A refused admin call (a 401 for a wrong token, a 403 for the auditor) logs its status; that is expected.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) errors.push(message.text());
  });
  await page.goto(CONSOLE_PATH);
  return { page, context, requests, errors, close: () => context.close() };
}

/** Signs in with the token as an operator would and waits for the menu. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel("Admin or auditor token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Console" }).waitFor();
}

/** Navigates with the menu or a hash and waits for the page's heading. */
export async function visit(page: Page, hash: string, heading: string | RegExp): Promise<void> {
  // The e2e tsconfig has Node's types, not the DOM's: this runs in the page.
  await page.evaluate((h) => {
    (globalThis as unknown as { location: { hash: string } }).location.hash = h;
  }, hash);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
}

/** A screenshot under test/e2e/screenshots/<name>.png: the full page, or only what the viewport shows. */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: options.fullPage ?? true });
  return path;
}

/** Every request stayed on the gateway's console and admin paths: nothing third-party, nothing through the data plane. */
export function foreignRequests(requests: readonly string[], base = gateway().gatewayUrl): string[] {
  return requests.filter((url) => !url.startsWith(`${base}${CONSOLE_PATH}`) && !url.startsWith(`${base}/_tollgate/admin/v1/`));
}

/**
 * An arrange step through the admin API as admin (adminCall), retried once
 * when the shared admin token's rate limit refuses it: other e2e files use
 * the same token at the same time, and a refused call changed nothing.
 */
export async function arrange(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  for (let attempt = 0; ; attempt += 1) {
    const answer = await adminCall(method, path, body);
    const retryAfterMs = (answer.body as { code?: string; retry_after_ms?: number } | null)?.code === "rate_limited" ? (answer.body as { retry_after_ms: number }).retry_after_ms : null;
    if (retryAfterMs === null || attempt > 0) return answer;
    await new Promise((resolve) => setTimeout(resolve, retryAfterMs));
  }
}

/** A private address (10.0.0.0/8) no other test is likely to use: 2^24 to draw from. */
export function uniqueAddress(): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
}

/**
 * Sends keyed requests through the gateway until `landed(sent)` says D1 holds
 * all of them. Metering and key-use tracking flush at most every second (e2e
 * config), and only when a request starts the flush, so the last requests
 * wait for the next one: keep sending, a request at a time, until the count
 * lands. Answers how many were sent.
 */
export async function sendUntilRecorded(key: string, landed: (sent: number) => Promise<boolean>, alreadySent = 0): Promise<number> {
  const deadlineMs = Date.now() + 30_000;
  let sent = alreadySent;
  while (Date.now() < deadlineMs) {
    const res = await fetch(`${gateway().gatewayUrl}/console-traffic`, { headers: { authorization: `Bearer ${key}` } });
    if (res.status !== 200) throw new Error(`the gateway answered ${res.status} to a keyed request`);
    sent += 1;
    const settleUntilMs = Date.now() + 1_500;
    while (Date.now() < settleUntilMs) {
      if (await landed(sent)) return sent;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`the ${sent} requests were not all recorded within 30 s`);
}
