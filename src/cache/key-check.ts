// The deployment's key-check HMAC key, per isolate. The secret never changes
// once made, so a loaded key is kept for the isolate's life; "no secret yet"
// (no key was ever minted) is rechecked after cache_ttl_s. D1 failing with
// nothing loaded throws: the caller answers 503 auth_unavailable.
import type { Config } from "../config";
import type { Db } from "../db/client";
import { ensureSetting, getSetting, KEY_CHECK_SECRET } from "../db/settings";
import { importKeyCheckSecret, newKeyCheckSecret } from "../identity/api-key";
import { joinWithPatience } from "./patience";

let loaded: CryptoKey | null = null;
let absentUntilMs = 0;
let loading: Promise<CryptoKey | null> | null = null;

/** The check key if it is loaded (or known absent), without waiting; undefined when a load is needed. */
export function peekKeyCheck(nowMs: number): CryptoKey | null | undefined {
  if (loaded !== null) return loaded;
  return nowMs < absentUntilMs ? null : undefined;
}

/** The check key, or null when no key was ever minted. One load in flight at a time. */
export async function loadKeyCheck(db: () => Db, config: Config, nowMs: number): Promise<CryptoKey | null> {
  const known = peekKeyCheck(nowMs);
  if (known !== undefined) return known;
  const shared = loading;
  if (shared !== null) {
    // Another request's load: join it with patience (see patience.ts).
    const joined = await joinWithPatience(shared);
    if (joined.settled) {
      if (joined.ok) return joined.value;
      throw joined.error;
    }
    if (loading === shared) loading = null;
  }
  const flight: { promise: Promise<CryptoKey | null> | null } = { promise: null };
  flight.promise = (async () => {
    try {
      const secret = await getSetting(db(), KEY_CHECK_SECRET);
      if (secret === null) {
        absentUntilMs = nowMs + config.cacheTtlMs;
        return null;
      }
      loaded = await importKeyCheckSecret(secret);
      return loaded;
    } finally {
      if (loading === flight.promise) loading = null;
    }
  })();
  loading = flight.promise;
  return flight.promise;
}

/** For minting: the check key, creating the deployment's secret on first use. */
export async function keyCheckForMint(db: Db, nowMs: number): Promise<CryptoKey> {
  if (loaded !== null) return loaded;
  const secret = await ensureSetting(db, KEY_CHECK_SECRET, newKeyCheckSecret(), nowMs);
  loaded = await importKeyCheckSecret(secret);
  absentUntilMs = 0;
  return loaded;
}
