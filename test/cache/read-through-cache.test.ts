import { describe, expect, it } from "vitest";
import { MAX_FLIGHT_MS, ReadThroughCache } from "../../src/cache/read-through-cache";

const OPTIONS = { maxEntries: 3, maxNegativeEntries: 2, ttlMs: 10_000, staleIfErrorMs: 300_000 };

function counter<V>(value: V) {
  let calls = 0;
  return {
    load: async () => {
      calls++;
      return value;
    },
    get calls() {
      return calls;
    },
  };
}

function deferred<V>() {
  let resolve!: (value: V) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<V>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("ReadThroughCache", () => {
  it("serves a value from the cache until its TTL passes, then loads again", async () => {
    const cache = new ReadThroughCache<string, string>(OPTIONS);
    const loader = counter("v");
    expect(await cache.get("a", 0, loader.load)).toBe("v");
    expect(await cache.get("a", 9_999, loader.load)).toBe("v");
    expect(loader.calls).toBe(1);
    expect(await cache.get("a", 10_000, loader.load)).toBe("v");
    expect(loader.calls).toBe(2);
  });

  it("shares one load among concurrent misses of a key", async () => {
    const cache = new ReadThroughCache<string, string>(OPTIONS);
    const pending = deferred<string>();
    let calls = 0;
    const load = () => {
      calls++;
      return pending.promise;
    };
    const all = Promise.all([cache.get("a", 0, load), cache.get("a", 0, load), cache.get("a", 1, load)]);
    pending.resolve("v");
    expect(await all).toEqual(["v", "v", "v"]);
    expect(calls).toBe(1);
  });

  it("keeps negative entries, so an unknown key is asked for once per TTL", async () => {
    const cache = new ReadThroughCache<string, string | null>(OPTIONS);
    const loader = counter(null);
    expect(await cache.get("missing", 0, loader.load)).toBeNull();
    expect(await cache.get("missing", 5_000, loader.load)).toBeNull();
    expect(loader.calls).toBe(1);
    expect(cache.peek("missing", 5_000)).toBeNull();
  });

  it("bounds positive entries, evicting the least recently used", async () => {
    const cache = new ReadThroughCache<string, string>(OPTIONS);
    for (const key of ["a", "b", "c"]) await cache.get(key, 0, async () => key);
    await cache.get("a", 1, async () => "reloaded"); // a hit: "a" becomes the youngest
    await cache.get("d", 2, async () => "d");
    expect(cache.size).toBe(3);
    expect(cache.peek("a", 3)).toBe("a");
    expect(cache.peek("b", 3)).toBeUndefined();
  });

  it("bounds negative entries separately, so unknown keys cannot push known ones out", async () => {
    const cache = new ReadThroughCache<string, string | null>(OPTIONS);
    await cache.get("known", 0, async () => "k");
    for (let i = 0; i < 50; i++) await cache.get(`unknown-${i}`, 0, async () => null);
    expect(cache.peek("known", 1)).toBe("k");
    expect(cache.size).toBe(3);
  });

  it("serves the last-known value for up to staleIfErrorMs past expiry when the loader fails", async () => {
    const cache = new ReadThroughCache<string, string>(OPTIONS);
    await cache.get("a", 0, async () => "v1");
    const failing = async (): Promise<string> => {
      throw new Error("d1 down");
    };
    expect(await cache.get("a", 10_000, failing)).toBe("v1");
    expect(await cache.get("a", 10_000 + 299_999, failing)).toBe("v1");
    await expect(cache.get("a", 10_000 + 300_000, failing)).rejects.toThrow("d1 down");
  });

  it("does not ask a failing loader again for a moment while it serves a stale value", async () => {
    const cache = new ReadThroughCache<string, string>(OPTIONS);
    await cache.get("a", 0, async () => "v1");
    let calls = 0;
    const failing = async (): Promise<string> => {
      calls++;
      throw new Error("d1 down");
    };
    await cache.get("a", 20_000, failing);
    await cache.get("a", 20_500, failing);
    expect(calls).toBe(1);
    await cache.get("a", 21_000, failing);
    expect(calls).toBe(2);
  });

  it("rethrows and caches nothing when the loader fails with no value held", async () => {
    const cache = new ReadThroughCache<string, string>(OPTIONS);
    await expect(
      cache.get("a", 0, async () => {
        throw new Error("d1 down");
      }),
    ).rejects.toThrow("d1 down");
    expect(await cache.get("a", 1, async () => "v")).toBe("v");
  });

  it("forgets a key on clear, and does not keep a load that was in flight across the clear", async () => {
    const cache = new ReadThroughCache<string, string>(OPTIONS);
    await cache.get("a", 0, async () => "old");
    cache.clear("a");
    expect(cache.peek("a", 1)).toBeUndefined();

    const pending = deferred<string>();
    const inFlight = cache.get("a", 2, () => pending.promise);
    cache.clear("a");
    pending.resolve("read-before-the-write");
    expect(await inFlight).toBe("read-before-the-write");
    expect(cache.peek("a", 3)).toBeUndefined();
    expect(await cache.get("a", 3, async () => "new")).toBe("new");
  });

  it("clears entries by value and all at once", async () => {
    const cache = new ReadThroughCache<string, { tenant: string } | null>(OPTIONS);
    await cache.get("k1", 0, async () => ({ tenant: "t1" }));
    await cache.get("k2", 0, async () => ({ tenant: "t2" }));
    cache.clearWhere((value) => value?.tenant === "t1");
    expect(cache.peek("k1", 1)).toBeUndefined();
    expect(cache.peek("k2", 1)).toEqual({ tenant: "t2" });
    cache.clearAll();
    expect(cache.size).toBe(0);
  });
});

describe("joining another request's load", () => {
  it("never starts a second load while one is in flight, and stores the finished one for everyone (issue 10 item 9)", async () => {
    const cache = new ReadThroughCache<string, string | null>({ maxEntries: 10, maxNegativeEntries: 10, ttlMs: 60_000, staleIfErrorMs: 0 });
    let loads = 0;
    let finish!: (v: string) => void;
    const slow = () => {
      loads++;
      return new Promise<string>((resolve) => (finish = resolve));
    };
    // 200 requests arrive over 800 ms of the cache's clock while one slow load runs (past
    // the 500 ms the cache once waited before loading again): they all join it.
    const waiting = Array.from({ length: 200 }, (_, i) => cache.get("k", i * 4, slow));
    await Promise.resolve();
    finish("loaded");
    expect(new Set(await Promise.all(waiting))).toEqual(new Set(["loaded"]));
    expect(loads).toBe(1);
    // Stored: later requests neither wait nor load.
    expect(await cache.get("k", 900, slow)).toBe("loaded");
    expect(loads).toBe(1);
  });

  it("serves a stale value at once to a request that finds a reload running, rather than loading again", async () => {
    const cache = new ReadThroughCache<string, string | null>({ maxEntries: 10, maxNegativeEntries: 10, ttlMs: 100, staleIfErrorMs: 10_000 });
    expect(await cache.get("k", 0, async () => "old")).toBe("old");
    let loads = 0;
    let finish!: (v: string) => void;
    const slow = () => {
      loads++;
      return new Promise<string>((resolve) => (finish = resolve));
    };
    // Expired at 100: the first request reloads, the next ones get the old value at once.
    const reloading = cache.get("k", 150, slow);
    expect(await cache.get("k", 160, slow)).toBe("old");
    expect(await cache.get("k", 170, slow)).toBe("old");
    expect(loads).toBe(1);
    finish("new");
    expect(await reloading).toBe("new");
    expect(await cache.get("k", 180, slow)).toBe("new");
  });

  it("hands the load it starts to keepAlive, so a cancelled request cannot strand its joiners", async () => {
    const cache = new ReadThroughCache<string, string | null>({ maxEntries: 10, maxNegativeEntries: 10, ttlMs: 60_000, staleIfErrorMs: 0 });
    const kept: Promise<unknown>[] = [];
    await cache.get("k", 0, async () => "v", (work) => kept.push(work));
    expect(kept).toHaveLength(1);
    await cache.get("k", 1, async () => "w", (work) => kept.push(work));
    expect(kept).toHaveLength(1);
  });

  it("replaces a load older than MAX_FLIGHT_MS, presumed dead with its request", async () => {
    const cache = new ReadThroughCache<string, string | null>({ maxEntries: 10, maxNegativeEntries: 10, ttlMs: 60_000, staleIfErrorMs: 0 });
    void cache.get("k", 0, () => new Promise<string>(() => {}));
    expect(await cache.get("k", MAX_FLIGHT_MS, async () => "fresh")).toBe("fresh");
    expect(await cache.get("k", MAX_FLIGHT_MS + 1, async () => "other")).toBe("fresh");
  });

  it("shares a load that settles in time: one load for concurrent misses", async () => {
    const cache = new ReadThroughCache<string, string | null>({ maxEntries: 10, maxNegativeEntries: 10, ttlMs: 60_000, staleIfErrorMs: 0 });
    let loads = 0;
    let finish!: (v: string) => void;
    const load = () => {
      loads++;
      return new Promise<string>((resolve) => (finish = resolve));
    };
    const pending = Promise.all([cache.get("s", 0, load), cache.get("s", 0, load), cache.get("s", 0, load)]);
    finish("v");
    const values = await pending;
    expect(values).toEqual(["v", "v", "v"]);
    expect(loads).toBe(1);
  });
});
