// D1 failures in the admin API. A write is one D1 batch (one transaction), so
// a failure leaves nothing half-written; the client gets 503
// admin_unavailable and no SQL or driver text.
import { problem } from "../errors";
import { errorName, log } from "../log/logger";

export class StorageUnavailable extends Error {
  override readonly name = "StorageUnavailable";
}

/** Runs a D1 read or batch; any failure becomes StorageUnavailable (the cause is logged by name only). */
export async function stored<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    log.error("admin_storage_failed", { error: errorName(error) });
    throw new StorageUnavailable("D1 failed");
  }
}

/** Seconds an admin client should wait after a storage failure. */
export const STORAGE_RETRY_AFTER_S = 1;

export function storageUnavailable(): Response {
  return problem("admin_unavailable", {
    detail: "The admin store could not be reached; nothing was changed.",
    headers: { "retry-after": String(STORAGE_RETRY_AFTER_S) },
  });
}
