// The chargeback export (GET /usage/export) through the Worker. Rows are
// seeded straight into usage_monthly; storage is shared by the whole file (and
// by the other files its runner ran before it), so
// each test owns its own months (or its own tenant names) and never sees
// another test's rows.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { periodOf } from "../../src/db/usage-monthly";
import { problemOf, unique } from "../helpers";
import { ADMIN_TOKEN, AUDITOR_TOKEN, adminCall, failingDb, testConfig } from "./admin-helpers";

const CONFIG = testConfig();
const CRLF = "\r\n";
const HEADER = `tenant,period,metric,value,status${CRLF}`;
/** The status cell of a finished month. */
const FINAL = ',"final"';
/** The status cell of the current month. */
const PROVISIONAL = ',"provisional"';

interface Row {
  tenant: string;
  period: string;
  metric: string;
  value: number;
}

async function seed(rows: readonly Row[]): Promise<void> {
  const insert = env.DB.prepare("insert into usage_monthly (tenant, period, metric, value) values (?, ?, ?, ?)");
  await env.DB.batch(rows.map((r) => insert.bind(r.tenant, r.period, r.metric, r.value)));
}

/** `count` rows in one period, tenants `<prefix>-000001`…, metric `requests`, value = n, in one statement. */
async function seedBulk(period: string, prefix: string, count: number): Promise<void> {
  await env.DB.prepare(
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
     insert into usage_monthly (tenant, period, metric, value) select printf('%s-%06d', ?, i), ?, 'requests', i from n`,
  )
    .bind(count, prefix, period)
    .run();
}

function exportCall(query: string, token: string | null = ADMIN_TOKEN, db?: D1Database): Promise<Response> {
  return adminCall("GET", `/usage/export${query}`, CONFIG, { token, ...(db === undefined ? {} : { env: { DB: db } }) });
}

async function textOf(response: Response, status = 200): Promise<string> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return text;
}

/** A D1 binding that answers `working` statements and then fails, as an outage in the middle of an export would. */
function dbFailingAfter(working: number): D1Database {
  let prepared = 0;
  return new Proxy(env.DB, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop);
      if (typeof value !== "function") return value;
      if (prop !== "prepare") return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        prepared += 1;
        if (prepared > working) throw new Error("D1_ERROR: simulated outage");
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

interface ParsedField {
  text: string;
  quoted: boolean;
}

/**
 * A strict RFC 4180 parser: every record ends in CRLF; a field is either
 * quoted (`""` for a quote, anything else literal, CR and LF included) or
 * bare (no quote, comma, CR or LF). Anything else throws.
 */
function parseCsv(input: string): ParsedField[][] {
  const records: ParsedField[][] = [];
  let record: ParsedField[] = [];
  let i = 0;
  while (i < input.length) {
    let field: ParsedField;
    if (input[i] === '"') {
      let text = "";
      i += 1;
      for (;;) {
        if (i >= input.length) throw new Error("unterminated quoted field");
        const ch = input[i] as string;
        if (ch === '"') {
          if (input[i + 1] === '"') {
            text += '"';
            i += 2;
            continue;
          }
          i += 1;
          break;
        }
        text += ch;
        i += 1;
      }
      field = { text, quoted: true };
    } else {
      let text = "";
      while (i < input.length && input[i] !== "," && input[i] !== "\r" && input[i] !== "\n") {
        if (input[i] === '"') throw new Error(`quote in a bare field at ${i}`);
        text += input[i];
        i += 1;
      }
      field = { text, quoted: false };
    }
    record.push(field);
    if (input[i] === ",") {
      i += 1;
      continue;
    }
    if (input.startsWith(CRLF, i)) {
      records.push(record);
      record = [];
      i += 2;
      continue;
    }
    throw new Error(`expected , or CRLF after a field at ${i}`);
  }
  if (record.length > 0) throw new Error("last record has no CRLF");
  return records;
}

/** Parsed data records (header checked and dropped) as rows; asserts text cells quoted and values bare. */
function rowsOf(csv: string): { tenant: string; period: string; metric: string; value: string }[] {
  const [header, ...records] = parseCsv(csv);
  expect(header).toEqual(["tenant", "period", "metric", "value", "status"].map((text) => ({ text, quoted: false })));
  return records.map((fields) => {
    expect(fields).toHaveLength(5);
    expect(fields.map((f) => f.quoted)).toEqual([true, true, true, false, true]);
    const [tenant, period, metric, value, status] = fields.map((f) => f.text) as [string, string, string, string, string];
    expect(["final", "provisional"]).toContain(status);
    return { tenant, period, metric, value };
  });
}

const byExportOrder = (a: Row, b: Row): number => {
  for (const k of ["period", "tenant", "metric"] as const) {
    if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  }
  return 0;
};

describe("usage export: output", () => {
  const golden: Row[] = [
    { tenant: "globex", period: "2001-02", metric: "requests", value: -5 },
    { tenant: "acme", period: "2001-01", metric: "requests", value: 120 },
    { tenant: "acme", period: "2001-02", metric: "bytes_stored", value: 1_048_576 },
    { tenant: "globex", period: "2001-01", metric: "requests", value: 7 },
    { tenant: "acme", period: "2001-01", metric: "bytes_in", value: 4096 },
    { tenant: "acme", period: "2000-12", metric: "requests", value: 1 },
    { tenant: "acme", period: "2001-03", metric: "requests", value: 1 },
  ];
  const GOLDEN_CSV =
    "tenant,period,metric,value,status\r\n" +
    '"acme","2001-01","bytes_in",4096,"final"\r\n' +
    '"acme","2001-01","requests",120,"final"\r\n' +
    '"globex","2001-01","requests",7,"final"\r\n' +
    '"acme","2001-02","bytes_stored",1048576,"final"\r\n' +
    '"globex","2001-02","requests",-5,"final"\r\n';
  const GOLDEN_NDJSON =
    '{"tenant":"acme","period":"2001-01","metric":"bytes_in","value":4096,"status":"final"}\n' +
    '{"tenant":"acme","period":"2001-01","metric":"requests","value":120,"status":"final"}\n' +
    '{"tenant":"globex","period":"2001-01","metric":"requests","value":7,"status":"final"}\n' +
    '{"tenant":"acme","period":"2001-02","metric":"bytes_stored","value":1048576,"status":"final"}\n' +
    '{"tenant":"globex","period":"2001-02","metric":"requests","value":-5,"status":"final"}\n';
  let seeded = false;
  async function seedGolden(): Promise<void> {
    if (!seeded) await seed(golden);
    seeded = true;
  }

  it("writes the golden CSV: header, quoted text, bare integers, CRLF, months outside the range left out", async () => {
    await seedGolden();
    const response = await exportCall("?from=2001-01&to=2001-02");
    expect(await textOf(response)).toBe(GOLDEN_CSV);
    expect(response.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(response.headers.get("content-disposition")).toBe('attachment; filename="tollgate-usage-2001-01-2001-02.csv"');
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  it("writes the golden NDJSON: one object per line, LF line ends", async () => {
    await seedGolden();
    const response = await exportCall("?from=2001-01&to=2001-02&format=ndjson");
    expect(await textOf(response)).toBe(GOLDEN_NDJSON);
    expect(response.headers.get("content-type")).toBe("application/x-ndjson");
    expect(response.headers.get("content-disposition")).toBe('attachment; filename="tollgate-usage-2001-01-2001-02.ndjson"');
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  it("gives byte-identical output for the same data, in both formats", async () => {
    await seedGolden();
    for (const format of ["csv", "ndjson"]) {
      const first = new Uint8Array(await (await exportCall(`?from=2000-12&to=2001-03&format=${format}`)).arrayBuffer());
      const second = new Uint8Array(await (await exportCall(`?from=2000-12&to=2001-03&format=${format}`)).arrayBuffer());
      expect(first.length).toBeGreaterThan(0);
      expect(second).toEqual(first);
    }
  });

  it("sorts by period, then tenant, then metric, by byte order, across years", async () => {
    const tenants = ["b", "a.b", "a-b", "a_b", "a0", "a", "ab"];
    const metrics = ["requests", "bytes_stored", "bytes_in", "Requests"];
    const periods = ["2011-02", "2010-12", "2011-01"];
    const rows: Row[] = [];
    let n = 0;
    for (const metric of metrics) for (const tenant of tenants) for (const period of periods) rows.push({ tenant, period, metric, value: n++ });
    // A scrambled insertion order, so the rowid order says nothing.
    const scrambled = rows.map((row, i) => ({ row, key: (i * 7919) % rows.length })).sort((x, y) => x.key - y.key).map((x) => x.row);
    await seed([...scrambled, { tenant: "a", period: "2010-11", metric: "requests", value: 1 }, { tenant: "a", period: "2011-03", metric: "requests", value: 1 }]);

    const exported = rowsOf(await textOf(await exportCall("?from=2010-12&to=2011-02")));
    const expected = [...rows].sort(byExportOrder).map((r) => ({ ...r, value: String(r.value) }));
    expect(exported).toEqual(expected);
  });

  it("exports one tenant with tenant=", async () => {
    const mine = unique("filt");
    const other = unique("filt");
    await seed([
      { tenant: mine, period: "2012-01", metric: "requests", value: 3 },
      { tenant: mine, period: "2012-02", metric: "requests", value: 4 },
      { tenant: other, period: "2012-01", metric: "requests", value: 5 },
    ]);
    expect(await textOf(await exportCall(`?from=2012-01&to=2012-02&tenant=${mine}`))).toBe(
      `${HEADER}"${mine}","2012-01","requests",3${FINAL}${CRLF}"${mine}","2012-02","requests",4${FINAL}${CRLF}`,
    );
    expect(await textOf(await exportCall(`?from=2012-01&to=2012-02&tenant=${mine}&format=ndjson`))).toBe(
      `{"tenant":"${mine}","period":"2012-01","metric":"requests","value":3,"status":"final"}\n{"tenant":"${mine}","period":"2012-02","metric":"requests","value":4,"status":"final"}\n`,
    );
  });

  it("defaults from to the current UTC month, to to from, and format to csv", async () => {
    const tenant = unique("now");
    const nowMs = Date.now();
    const current = periodOf(nowMs);
    const previous = periodOf(Date.UTC(new Date(nowMs).getUTCFullYear(), new Date(nowMs).getUTCMonth() - 1, 15));
    await seed([
      { tenant, period: current, metric: "requests", value: 11 },
      { tenant, period: previous, metric: "requests", value: 10 },
    ]);
    const response = await exportCall(`?tenant=${tenant}`);
    expect(await textOf(response)).toBe(`${HEADER}"${tenant}","${current}","requests",11${PROVISIONAL}${CRLF}`);
    expect(response.headers.get("content-disposition")).toBe(`attachment; filename="tollgate-usage-${current}-${current}.csv"`);
    // `to` alone is checked against the defaulted `from`.
    expect(await textOf(await exportCall(`?tenant=${tenant}&from=${previous}`))).toBe(`${HEADER}"${tenant}","${previous}","requests",10${FINAL}${CRLF}`);
    expect(await textOf(await exportCall(`?tenant=${tenant}&from=${previous}&to=${current}`))).toBe(
      `${HEADER}"${tenant}","${previous}","requests",10${FINAL}${CRLF}"${tenant}","${current}","requests",11${PROVISIONAL}${CRLF}`,
    );
  });

  it("answers an empty range with the header only (CSV) or an empty body (NDJSON)", async () => {
    const response = await exportCall("?from=1970-01&to=1970-12");
    expect(await textOf(response)).toBe(HEADER);
    expect(await textOf(await exportCall("?from=1970-01&to=1970-12&format=ndjson"))).toBe("");
  });
});

describe("usage export: formula injection (OWASP CSV injection)", () => {
  // A period no other file writes: this test exports the whole period, and
  // the workers project's files share one D1 per runner (isolate: false).
  const PERIOD = "2019-06";
  // Each written as a tenant (metric "requests") and as a metric (tenant "acme").
  const VECTORS = ['=1+2";=1+2', "+SUM(1)", "-2", "@A1", "\t=1", "\r=1", "\n=1", "\uFF1D1", "  =1", "\u3000=1", " \uFF0B1"];
  const HARMLESS = ["safe", "a=1", "1-2", " x", "'=already"];

  it("prefixes every vector with ' inside the quotes, keeps the rest of the cell, and leaves a negative value bare", async () => {
    await seed([
      ...VECTORS.map((v) => ({ tenant: v, period: PERIOD, metric: "requests", value: -2 })),
      ...VECTORS.map((v) => ({ tenant: "acme", period: PERIOD, metric: v, value: 3 })),
      ...HARMLESS.map((v) => ({ tenant: "zz-harmless", period: PERIOD, metric: v, value: 0 })),
    ]);
    const csv = await textOf(await exportCall(`?from=${PERIOD}`));

    // The exact bytes of a few vectors, as a spreadsheet would receive them.
    expect(csv).toContain(`"'=1+2"";=1+2","${PERIOD}","requests",-2${FINAL}${CRLF}`);
    expect(csv).toContain(`"'+SUM(1)","${PERIOD}","requests",-2${FINAL}${CRLF}`);
    expect(csv).toContain(`"'-2","${PERIOD}","requests",-2${FINAL}${CRLF}`);
    expect(csv).toContain(`"'@A1","${PERIOD}","requests",-2${FINAL}${CRLF}`);
    expect(csv).toContain(`"'\t=1","${PERIOD}","requests",-2${FINAL}${CRLF}`);
    expect(csv).toContain(`"'\r=1","${PERIOD}","requests",-2${FINAL}${CRLF}`);
    expect(csv).toContain(`"'\uFF1D1","${PERIOD}","requests",-2${FINAL}${CRLF}`);
    expect(csv).toContain(`"'  =1","${PERIOD}","requests",-2${FINAL}${CRLF}`);
    expect(csv).toContain(`"acme","${PERIOD}","'=1+2"";=1+2",3${FINAL}${CRLF}`);
    expect(csv).toContain(`"acme","${PERIOD}","'-2",3${FINAL}${CRLF}`);

    // The round trip: a strict RFC 4180 parser gives back every cell, with the `'`.
    const rows = rowsOf(csv);
    const expected = [
      ...VECTORS.map((v) => ({ tenant: `'${v}`, period: PERIOD, metric: "requests", value: "-2", order: { tenant: v, period: PERIOD, metric: "requests" } })),
      ...VECTORS.map((v) => ({ tenant: "acme", period: PERIOD, metric: `'${v}`, value: "3", order: { tenant: "acme", period: PERIOD, metric: v } })),
      ...HARMLESS.map((v) => ({ tenant: "zz-harmless", period: PERIOD, metric: v, value: "0", order: { tenant: "zz-harmless", period: PERIOD, metric: v } })),
    ]
      .sort((a, b) => byExportOrder({ ...a.order, value: 0 }, { ...b.order, value: 0 }))
      .map(({ order: _order, ...row }) => row);
    expect(rows).toEqual(expected);
  });

  it("leaves NDJSON as the data: no prefix there", async () => {
    const ndjson = await textOf(await exportCall(`?from=${PERIOD}&format=ndjson`));
    const objects = ndjson
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Row);
    expect(objects.filter((o) => o.metric === "requests" && o.value === -2).map((o) => o.tenant).sort()).toEqual([...VECTORS].sort());
  });
});

describe("usage export: status and adjustments", () => {
  async function adjust(tenant: string, period: string, metric: string, value: number): Promise<void> {
    await env.DB.prepare("insert into usage_adjustments (tenant, period, metric, value, attribution, created_at) values (?, ?, ?, ?, 'reconciliation', 1)")
      .bind(tenant, period, metric, value)
      .run();
  }

  it("marks the current UTC month provisional and finished months final, in both formats", async () => {
    const tenant = unique("st");
    const nowMs = Date.now();
    const current = periodOf(nowMs);
    const previous = periodOf(Date.UTC(new Date(nowMs).getUTCFullYear(), new Date(nowMs).getUTCMonth() - 1, 15));
    await seed([
      { tenant, period: previous, metric: "bytes_stored", value: 5 },
      { tenant, period: current, metric: "bytes_stored", value: 6 },
    ]);
    expect(await textOf(await exportCall(`?tenant=${tenant}&from=${previous}&to=${current}`))).toBe(
      `${HEADER}"${tenant}","${previous}","bytes_stored",5,"final"${CRLF}"${tenant}","${current}","bytes_stored",6,"provisional"${CRLF}`,
    );
    const ndjson = (await textOf(await exportCall(`?tenant=${tenant}&from=${previous}&to=${current}&format=ndjson`))).trim().split("\n").map((l) => JSON.parse(l) as { status: string });
    expect(ndjson.map((o) => o.status)).toEqual(["final", "provisional"]);
  });

  it("adds a month's adjustments into its figure, including a key that has only adjustments", async () => {
    const [a, b] = [unique("adj"), unique("adj")].sort() as [string, string];
    await seed([
      { tenant: a, period: "2016-03", metric: "bytes_stored", value: 1000 },
      { tenant: a, period: "2016-03", metric: "requests", value: 7 },
      { tenant: a, period: "2016-04", metric: "bytes_stored", value: 10 },
    ]);
    await adjust(a, "2016-03", "bytes_stored", -300);
    await adjust(a, "2016-03", "bytes_stored", 50);
    await adjust(b, "2016-03", "bytes_stored", 42);
    await adjust(a, "2016-05", "bytes_stored", 1);
    expect(await textOf(await exportCall(`?from=2016-03&to=2016-04`))).toBe(
      HEADER +
        `"${a}","2016-03","bytes_stored",750,"final"${CRLF}` +
        `"${a}","2016-03","requests",7,"final"${CRLF}` +
        `"${b}","2016-03","bytes_stored",42,"final"${CRLF}` +
        `"${a}","2016-04","bytes_stored",10,"final"${CRLF}`,
    );
    expect(await textOf(await exportCall(`?from=2016-03&tenant=${b}&format=ndjson`))).toBe(`{"tenant":"${b}","period":"2016-03","metric":"bytes_stored","value":42,"status":"final"}\n`);
  });
});

describe("usage export: paging and the row cap", () => {
  it("reads every page: 25,001 rows come back complete, in order, each once", async () => {
    await seedBulk("2301-01", "pg", 25_001);
    const csv = await textOf(await exportCall("?from=2301-01"));
    const lines = csv.split(CRLF);
    expect(lines.pop()).toBe("");
    expect(lines).toHaveLength(25_002);
    // A month after the current one is not finished either.
    expect(lines[1]).toBe('"pg-000001","2301-01","requests",1,"provisional"');
    expect(lines[25_001]).toBe('"pg-025001","2301-01","requests",25001,"provisional"');
    for (let i = 2; i < lines.length; i++) expect((lines[i - 1] as string) < (lines[i] as string)).toBe(true);
  });

  it("answers 503, not a short file, when D1 fails after the first page", async () => {
    await seedBulk("2302-01", "half", 10_001);
    const response = await exportCall("?from=2302-01", ADMIN_TOKEN, dbFailingAfter(1));
    expect(response.status).toBe(503);
    expect(response.headers.get("content-disposition")).toBeNull();
    expect((await problemOf(response)).code).toBe("admin_unavailable");
    // The same binding serves a one-page export: the failure above was the second page's.
    expect(await textOf(await exportCall("?from=2302-01&tenant=half-000001", ADMIN_TOKEN, dbFailingAfter(1)))).toBe(`${HEADER}"half-000001","2302-01","requests",1${PROVISIONAL}${CRLF}`);
  });

  it("refuses more than 250,000 rows with 400 naming `to` and a hint to narrow the range", async () => {
    await seedBulk("2303-01", "cap", 250_001);
    const response = await exportCall("?from=2303-01");
    expect(response.status).toBe(400);
    expect(response.headers.get("content-disposition")).toBeNull();
    const body = await problemOf(response);
    expect(body).toMatchObject({ code: "invalid_request", field: "to", max_rows: 250_000 });
    expect(String(body.hint)).toMatch(/tenant=/);
    // One tenant of that month still exports.
    expect(await textOf(await exportCall("?from=2303-01&tenant=cap-000007"))).toBe(`${HEADER}"cap-000007","2303-01","requests",7${PROVISIONAL}${CRLF}`);
  });
});

describe("usage export: refusals", () => {
  it.each([
    ["from=2024-13", "from"],
    ["from=2024-00", "from"],
    ["from=2024-1", "from"],
    ["from=24-01", "from"],
    ["from=2024-01-01", "from"],
    ["from=", "from"],
    ["from=2024-01&to=2024/02", "to"],
    ["from=2024-01&to=2024-13", "to"],
    ["from=2024-03&to=2024-02", "to"],
    ["to=1999-01", "to"],
    ["from=2000-01&to=2010-01", "to"],
    ["from=2024-01&format=xlsx", "format"],
    ["from=2024-01&format=CSV", "format"],
    ["from=2024-01&tenant=Bad_Tenant", "tenant"],
    ["from=2024-01&tenant=-lead", "tenant"],
    ["from=2024-01&since=2024-01", "since"],
  ])("refuses %s with 400 invalid_request naming %s", async (query, field) => {
    const response = await exportCall(`?${query}`);
    expect(response.status).toBe(400);
    expect(response.headers.get("content-disposition")).toBeNull();
    expect(await problemOf(response)).toMatchObject({ code: "invalid_request", field });
  });

  it("accepts exactly 120 months", async () => {
    const response = await exportCall("?from=1800-01&to=1809-12");
    expect(await textOf(response)).toBe(HEADER);
  });

  it("answers 503 admin_unavailable, not a CSV, when D1 fails", async () => {
    const response = await exportCall("?from=2001-01", ADMIN_TOKEN, failingDb());
    expect(response.status).toBe(503);
    expect(response.headers.get("content-disposition")).toBeNull();
    expect(response.headers.get("retry-after")).toBe("1");
    expect(await problemOf(response)).toMatchObject({ code: "admin_unavailable", status: 503 });
  });
});

describe("usage export: who may read it", () => {
  it("lets the auditor token export", async () => {
    const tenant = unique("aud");
    await seed([{ tenant, period: "2015-05", metric: "requests", value: 9 }]);
    expect(await textOf(await exportCall(`?from=2015-05&tenant=${tenant}`, AUDITOR_TOKEN))).toBe(`${HEADER}"${tenant}","2015-05","requests",9${FINAL}${CRLF}`);
  });

  it("refuses a request with no token or a wrong one with 401", async () => {
    for (const token of [null, "not-the-token"]) {
      const response = await exportCall("?from=2015-05", token);
      expect(response.status).toBe(401);
      expect((await problemOf(response)).code).toBe("admin_unauthorized");
    }
  });
});
