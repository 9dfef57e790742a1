// Stand-ins for the alert tests: an ALERTS queue that records what the
// gateway sends, and a LIMIT_LEDGER whose every call throws (as a reset
// object's stubs do) while its ids are the real ones.
import { env } from "cloudflare:workers";
import type { AlertMessage } from "../../src/alerts/alert";

export function recordingQueue(): { ALERTS: { send(message: unknown): Promise<void> }; sent: AlertMessage[] } {
  const sent: AlertMessage[] = [];
  return { ALERTS: { send: async (message: unknown) => void sent.push(message as AlertMessage) }, sent };
}

export const FAILING_LEDGER = {
  idFromName: (name: string) => env.LIMIT_LEDGER.idFromName(name),
  get: () =>
    new Proxy(
      {},
      {
        get: () => () => {
          throw new Error("Durable Object reset because its code was updated.");
        },
      },
    ),
};
