// The shape of a data-plane step. Each step is made by a factory that takes
// its options — compiled once per config by the runtime, like hono's own
// middleware factories — and returns a named function of the request's
// Exchange: null to go on, or the Response that answers the request (a
// refusal). A step that must wait (a cache miss, a quota reservation)
// returns a promise; the hot path returns synchronously, so a request that
// needs no I/O awaits nothing until the forward.
//
// A step's promise is kept alive with waitUntil by the gateway (a client that
// hangs up while the step waits must not strand what it took), unless the
// step sets `x.settlesInTurn` with it: a promise that waits on no I/O (an HMAC
// in workerd, which signs before it returns) settles before the runtime could
// see the client go, so keeping it alive is work for nothing. Such a step is
// run again once its promise settles null, and goes on from what it recorded
// on the exchange; anything it then waits on is kept alive as usual. (A 401
// for a made-up key is this case: its check is the only thing it awaits.)
import type { Exchange } from "../exchange";

export type CheckResult = Response | null;
export type Check = (x: Exchange) => CheckResult | Promise<CheckResult>;
