// At most two heavy starts of a kind at once, across every test process of
// the run: two gateways (a `wrangler dev` with its migrations, `npm start`)
// and two Chromium launches. Vitest runs six files at a time; at the start of `npm test` up to
// eight of them each start a gateway of their own and a browser. On a cold
// machine (a fresh clone: node_modules, wrangler's bundler and Chromium's
// files not yet in the page cache) eight cold starts at once on two cores
// took minutes each, past the hooks' timeouts, where two at a time take
// seconds each. A start that waits for a slot only waits; its own timeout
// counts from the moment it holds one. Browsers have slots of their own, so a
// file launching one (seconds) never waits behind the gateways (tens of
// seconds on a busy machine) past its hook's timeout.
//
// A slot is a directory made with mkdir (atomic: one process wins) holding
// the owner's pid. A slot whose owner is gone (a run stopped with Ctrl-C) or
// that is older than STALE_MS is taken over.
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The kinds of start, and how many of each may run at once. */
const SLOTS = { gateway: 2, browser: 2 } as const;
export type StartKind = keyof typeof SLOTS;
const SLOT_DIR = join(tmpdir(), "tollgate-e2e-start-slots");
const POLL_MS = 200;
/** Longer than any start may take (the longest start timeout is 240 s). */
const STALE_MS = 300_000;

function ownerAlive(slot: string): boolean {
  try {
    const pid = Number(readFileSync(join(slot, "pid"), "utf8"));
    if (!Number.isInteger(pid) || pid <= 0) return Date.now() - statSync(slot).mtimeMs < 5_000; // being written
    process.kill(pid, 0);
    return Date.now() - statSync(slot).mtimeMs < STALE_MS;
  } catch (error) {
    // ESRCH: the owner is gone. EPERM: alive, another user's. ENOENT: released meanwhile, or pid not yet written.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EPERM") return true;
    if (code === "ENOENT") {
      try {
        return Date.now() - statSync(slot).mtimeMs < 5_000;
      } catch {
        return false;
      }
    }
    return false;
  }
}

function tryTake(kind: StartKind): string | undefined {
  mkdirSync(SLOT_DIR, { recursive: true });
  for (let i = 0; i < SLOTS[kind]; i++) {
    const slot = join(SLOT_DIR, `${kind}-${i}`);
    try {
      mkdirSync(slot);
    } catch {
      if (!ownerAlive(slot)) rmSync(slot, { recursive: true, force: true });
      continue;
    }
    writeFileSync(join(slot, "pid"), String(process.pid));
    return slot;
  }
  return undefined;
}

/** Runs `start` while holding one of the slots of its kind, waiting for one first. */
export async function withStartSlot<T>(kind: StartKind, start: () => Promise<T>): Promise<T> {
  let slot = tryTake(kind);
  while (slot === undefined) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    slot = tryTake(kind);
  }
  const release = () => rmSync(slot, { recursive: true, force: true });
  process.once("exit", release);
  try {
    return await start();
  } finally {
    process.off("exit", release);
    release();
  }
}
