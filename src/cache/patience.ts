// Joining another request's load safely. A Worker isolate serves many
// requests at once, and a load (a D1 query) belongs to the request that
// started it: if that request is cancelled (its client went away), its I/O
// is cancelled too and the promise never settles, so a request awaiting it
// would wait forever — workerd then fails it as hung ("Worker's code had
// hung", seen in the abuse bench). So a request joins a shared load for at
// most JOIN_PATIENCE_MS (a timer of its own keeps it alive meanwhile), then
// loads for itself.

/** Long enough for a D1 query in the ordinary case; short enough that a dead load costs little. */
export const JOIN_PATIENCE_MS = 500;

export type Joined<T> = { settled: true; ok: true; value: T } | { settled: true; ok: false; error: unknown } | { settled: false };

/** The shared promise's outcome, or `{settled: false}` after `patienceMs`. */
export async function joinWithPatience<T>(shared: Promise<T>, patienceMs: number = JOIN_PATIENCE_MS): Promise<Joined<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<Joined<T>>((resolve) => {
    timer = setTimeout(() => resolve({ settled: false }), patienceMs);
  });
  try {
    return await Promise.race([
      shared.then(
        (value): Joined<T> => ({ settled: true, ok: true, value }),
        (error: unknown): Joined<T> => ({ settled: true, ok: false, error }),
      ),
      timeout,
    ]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}
