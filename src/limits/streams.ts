// docs/design.md: open WebSocket streams per credential per isolate. A stream
// holds no in-flight slot (it can stay open for hours, and would starve the
// credential's requests); it holds a stream slot instead, from the open until
// whatever ends it (either side closes, rent or a message is refused, the
// client vanishes, the origin drops), released once by the stream's session
// (src/limits/stream-session.ts) or at once when the open fails.
import { problem } from "../errors";
import type { Check } from "./check";

/** An `Upgrade: websocket` GET (RFC 6455 section 4.1: the opening handshake is a GET). */
export function isWebSocketUpgrade(request: Request): boolean {
  const upgrade = request.headers.get("upgrade");
  return upgrade !== null && request.method === "GET" && upgrade.trim().toLowerCase() === "websocket";
}

/** Open streams by credential; entries are deleted at zero, so the map holds only credentials with open streams. */
export class StreamTable {
  readonly #byCredential = new Map<string, number>();
  #total = 0;

  /** Open streams in the isolate (of this runtime). */
  get total(): number {
    return this.#total;
  }

  countOf(credential: string): number {
    return this.#byCredential.get(credential) ?? 0;
  }

  /** Takes a slot unless the credential already holds `perCredential`. */
  tryAcquire(credential: string, perCredential: number): boolean {
    const held = this.#byCredential.get(credential) ?? 0;
    if (held >= perCredential) return false;
    this.#byCredential.set(credential, held + 1);
    this.#total++;
    return true;
  }

  release(credential: string): void {
    const held = this.#byCredential.get(credential);
    if (held === undefined) return;
    if (held <= 1) this.#byCredential.delete(credential);
    else this.#byCredential.set(credential, held - 1);
    this.#total--;
  }
}

export interface StreamSlotOptions {
  readonly table: StreamTable;
  readonly perCredential: number;
}

/**
 * Takes a stream slot for the caller's credential (`key:<id>`, `jwt:<hex>`,
 * `ip:<address or /64>`), or answers 429 too_many_streams. Runs in the
 * stream pipeline where requests run the in-flight step.
 * @example const slots = streamSlots({ table: runtime.streams, perCredential: config.streams.perCredential });
 */
export function streamSlots(options: StreamSlotOptions): Check {
  const { table, perCredential } = options;
  return function streamSlotStep(x) {
    const credential = x.caller.callerKey;
    if (!table.tryAcquire(credential, perCredential)) {
      return x.refuse(
        "too_many_streams",
        problem("too_many_streams", {
          detail: `This caller already holds ${perCredential} open streams here; close one before opening another.`,
          extras: { limit: perCredential },
          headers: { "retry-after": "1" },
        }),
      );
    }
    let released = false;
    x.releaseStream = () => {
      if (released) return;
      released = true;
      table.release(credential);
    };
    return null;
  };
}
