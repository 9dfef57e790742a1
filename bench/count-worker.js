// Bench only, never deployed: Tollgate's own bundle (bench/.build/index.js,
// from `wrangler deploy --dry-run`) behind a wrapper that hands it counting
// proxies of its D1 binding (DB) and Durable Object namespace (TENANT_QUOTA),
// so the bench can count what a request really costs in I/O. The counts are
// read and reset at /__bench/counts, a path only this wrapper answers; the
// production Worker has no such path.
import gateway from "./.build/index.js";

export { TenantQuota } from "./.build/index.js";

const counts = newCounts();

function newCounts() {
  // d1: one entry per round trip (a statement run, or one batch);
  // d1_statements: statements, a batch counting each of its own.
  return { d1: {}, d1_round_trips: 0, d1_statements: 0, durable_object: {}, durable_object_calls: 0, requests: 0 };
}

function bump(map, label, by = 1) {
  map[label] = (map[label] ?? 0) + by;
}

/** "select api_keys", "update api_keys", "insert usage_monthly", … from the SQL text. */
function labelOf(sql) {
  const text = sql.replace(/\s+/g, " ").trim().toLowerCase();
  const verb = text.split(" ")[0];
  const table = text.match(/\b(?:from|into|update|join)\s+["`]?([a-z_][a-z0-9_]*)/)?.[1] ?? "?";
  return `${verb} ${table}`;
}

class CountingStatement {
  constructor(real, label) {
    this.real = real;
    this.label = label;
  }
  bind(...values) {
    return new CountingStatement(this.real.bind(...values), this.label);
  }
  #count() {
    counts.d1_round_trips += 1;
    counts.d1_statements += 1;
    bump(counts.d1, this.label);
  }
  first(...a) {
    this.#count();
    return this.real.first(...a);
  }
  run(...a) {
    this.#count();
    return this.real.run(...a);
  }
  all(...a) {
    this.#count();
    return this.real.all(...a);
  }
  raw(...a) {
    this.#count();
    return this.real.raw(...a);
  }
}

function countingD1(real) {
  return {
    prepare: (sql) => new CountingStatement(real.prepare(sql), labelOf(sql)),
    batch(statements) {
      counts.d1_round_trips += 1;
      for (const s of statements) {
        counts.d1_statements += 1;
        bump(counts.d1, `${s.label} (in batch)`);
      }
      return real.batch(statements.map((s) => s.real));
    },
    exec(sql) {
      counts.d1_round_trips += 1;
      counts.d1_statements += 1;
      bump(counts.d1, "exec");
      return real.exec(sql);
    },
    dump: () => real.dump(),
    withSession: () => {
      throw new Error("the bench's counting D1 wrapper does not support sessions");
    },
  };
}

/** Every method called on a stub counts as one Durable Object call. */
function countingStub(stub) {
  return new Proxy(
    {},
    {
      get(_target, prop) {
        const value = stub[prop];
        if (typeof prop !== "string" || prop === "then" || typeof value !== "function") return value;
        return (...args) => {
          counts.durable_object_calls += 1;
          bump(counts.durable_object, prop);
          return stub[prop](...args);
        };
      },
    },
  );
}

function countingNamespace(real) {
  return {
    idFromName: (name) => real.idFromName(name),
    idFromString: (id) => real.idFromString(id),
    newUniqueId: (o) => real.newUniqueId(o),
    get: (id, o) => countingStub(real.get(id, o)),
    getByName: (name, o) => countingStub(real.get(real.idFromName(name), o)),
    jurisdiction: (j) => countingNamespace(real.jurisdiction(j)),
  };
}

// One wrapped env per isolate, like the real one: the gateway caches its
// drizzle handle per binding object and its parsed config per TOLLGATE value.
let wrapped = null;

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/counts") {
      const body = JSON.stringify(counts);
      if (request.method === "POST") Object.assign(counts, newCounts());
      return new Response(body, { headers: { "content-type": "application/json" } });
    }
    wrapped ??= { ...env, DB: countingD1(env.DB), TENANT_QUOTA: countingNamespace(env.TENANT_QUOTA) };
    counts.requests += 1;
    return gateway.fetch(request, wrapped, ctx);
  },
};
