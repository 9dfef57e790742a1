// The one way to hand work to the runtime past the response (STYLE 17):
// `waitUntil` keeps the request's context alive until the promise settles,
// also after the client has gone, and this wrapper never throws and never
// lets a rejection go unhandled.

/** Where background work goes: the request's ExecutionContext, or nothing (a test calling a step alone). */
export interface Background {
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * Keeps `work` running past the response. A rejection is swallowed here: the
 * work is expected to log its own failures (without detail that could carry
 * SQL or input). With no context, the promise still runs, unobserved.
 */
export function keepAlive(ctx: Background | null | undefined, work: Promise<unknown>): void {
  const guarded = work.then(noop, noop);
  if (ctx === null || ctx === undefined) return;
  try {
    ctx.waitUntil(guarded);
  } catch {
    // A context that refuses more work (already finished): the promise still runs.
  }
}

function noop(): void {}
