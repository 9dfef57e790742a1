// Decides, once per request, whether the checks run at all: exempt paths
// (default /healthz, /readyz, /livez, /metrics) and `mode: "off"` are
// forwarded with no check and no charge. A WebSocket upgrade is never exempt
// by its path: a stream on /healthz would otherwise hold the origin for free.
import type { Exchange } from "../context";

export interface ClassifyOptions {
  readonly exemptPaths: readonly string[];
  readonly mode: "enforce" | "shadow" | "off";
}

/**
 * Marks exempt and `mode: "off"` requests as bypassing every check.
 * @example const bypass = classify({ exemptPaths: ["/healthz"], mode: "enforce" }); bypass(x) // true for /healthz
 */
export function classify(options: ClassifyOptions): (x: Exchange) => boolean {
  const exempt: ReadonlySet<string> = new Set(options.exemptPaths);
  const off = options.mode === "off";
  return function classifyRequest(x) {
    if (!x.upgrade && exempt.has(x.path)) {
      x.decision = "exempt";
      x.bypass = true;
    } else if (off) {
      x.decision = "off";
      x.bypass = true;
    }
    return x.bypass;
  };
}
