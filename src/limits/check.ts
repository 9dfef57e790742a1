// The shape of a data-plane step. Each step is made by a factory that takes
// its options — compiled once per config by the runtime, like hono's own
// middleware factories — and returns a named function of the request's
// Exchange: null to go on, or the Response that answers the request (a
// refusal). A step that must wait (a cache miss, a quota reservation)
// returns a promise; the hot path returns synchronously, so a request that
// needs no I/O awaits nothing until the forward.
import type { Exchange } from "../exchange";

export type CheckResult = Response | null;
export type Check = (x: Exchange) => CheckResult | Promise<CheckResult>;
