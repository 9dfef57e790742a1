// Before anything is timed, bench/run.mjs checks that each control does the
// job of the gateway case it is compared with, on the running Worker:
// - the origin sees the same header names from the hygienic forward as from
//   the gateway, and neither passes on a name the contract drops;
// - the controls' 429 and 401 carry the gateway's status, header names and
//   a body of about the same size;
// - one admitted request writes exactly one line to workerd's stdout file,
//   through the gateway and through the hygienic forward alike.
// A control that does less than the gateway would flatter the gateway's
// ratio; these checks fail the run instead. Differences that do not make a
// control cheaper (a header the gateway adds that the control does not) are
// reported, not failed.
import { randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { CLIENT_ADDRESS } from "./cost-cases.mjs";

/**
 * Names a client sends that the contract drops before the origin (the value
 * of Connection lists `x-hop-listed`). Not Transfer-Encoding: it frames the
 * request's body.
 */
const DROPPED = ["x-hop-listed", "keep-alive", "te", "trailer", "upgrade", "proxy-authorization", "proxy-connection", "forwarded", "x-forwarded-host", "true-client-ip", "x-client-ip", "x-cluster-client-ip", "x-http-method-override", "x-http-method", "x-method-override"];
/** Names the contract rewrites: what the client sent must not reach the origin. */
const REWRITTEN = { "x-forwarded-for": CLIENT_ADDRESS, "x-real-ip": CLIENT_ADDRESS };
const HOSTILE = {
  connection: "x-hop-listed, upgrade, close",
  "x-hop-listed": "1",
  "keep-alive": "timeout=5",
  te: "trailers",
  trailer: "x-t",
  upgrade: "h2c",
  "proxy-authorization": "Basic eA==",
  "proxy-connection": "keep-alive",
  forwarded: "for=192.0.2.1",
  "x-forwarded-host": "elsewhere.example",
  "true-client-ip": "192.0.2.1",
  "x-client-ip": "192.0.2.1",
  "x-cluster-client-ip": "192.0.2.1",
  "x-http-method-override": "DELETE",
  "x-http-method": "DELETE",
  "x-method-override": "DELETE",
  "x-forwarded-for": "192.0.2.1",
  "x-real-ip": "192.0.2.1",
  "x-tollgate-tenant": "someone-else",
  "x-tollgate-key-id": "someone-else",
  "x-kept": "1",
  "cf-connecting-ip": CLIENT_ADDRESS,
};

/**
 * One GET with exactly these headers, written on a socket of its own
 * (neither fetch nor node:http sends Trailer or Upgrade on a GET); the
 * answer is read to the connection's close: {status, body}.
 */
function rawGet(url, path, headers) {
  const { hostname, port } = new URL(url);
  const head = [`GET ${path} HTTP/1.1`, `host: ${hostname}:${port}`, ...Object.entries(headers).map(([n, v]) => `${n}: ${v}`)].join("\r\n");
  return new Promise((resolve, reject) => {
    const chunks = [];
    const socket = connect(Number(port), hostname, () => socket.end(`${head}\r\n\r\n`));
    socket.setTimeout(10_000, () => socket.destroy(new Error("no answer in 10 s")));
    socket.on("data", (c) => chunks.push(c));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString();
      const split = text.indexOf("\r\n\r\n");
      const status = Number(text.slice(9, 12));
      let body = text.slice(split + 4);
      if (/^transfer-encoding:\s*chunked/im.test(text.slice(0, split))) {
        let out = "";
        for (let at = 0; ; ) {
          const eol = body.indexOf("\r\n", at);
          const size = Number.parseInt(body.slice(at, eol), 16);
          if (!(size > 0)) break;
          out += body.slice(eol + 2, eol + 2 + size);
          at = eol + 2 + size + 2;
        }
        body = out;
      }
      resolve({ status, body });
    });
  });
}

/** One GET with these headers: {status, headers, body}. */
function get(url, path, headers) {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { method: "GET", headers, agent: false }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

const names = (headers) => Object.keys(headers).filter((n) => !["date", "connection", "keep-alive", "content-length", "transfer-encoding"].includes(n)).sort();
const onlyIn = (x, y) => x.filter((n) => !y.includes(n));

/** The new lines of a file since byte `from`. */
function linesSince(path, from) {
  const text = readFileSync(path, "utf8").slice(from);
  return text.split("\n").filter((l) => l.length > 0);
}

/**
 * Runs the checks against the Worker at `url` (bench/cost-worker.js);
 * throws on a control that does less than the gateway. Returns what it
 * found, for the result file.
 */
export async function checkControls({ url, keys, stdoutPath }) {
  const problems = [];
  const notes = [];
  const auth = { authorization: `Bearer ${keys.hot}` };

  // Header hygiene: what the origin sees.
  const seen = {};
  for (const variant of ["gateway", "hygienic"]) {
    const res = await rawGet(url, "/__echo", { ...HOSTILE, ...auth, "x-bench-variant": variant });
    if (res.status !== 200) throw new Error(`${variant}: /__echo answered ${res.status}: ${res.body.slice(0, 300)}`);
    seen[variant] = JSON.parse(res.body);
    for (const name of DROPPED) if (name in seen[variant]) problems.push(`${variant} passed ${name} to the origin`);
    for (const [name, value] of Object.entries(REWRITTEN)) if (seen[variant][name] !== value) problems.push(`${variant} sent ${name}: ${seen[variant][name]} (expected ${value})`);
    if (seen[variant]["x-tollgate-tenant"] === HOSTILE["x-tollgate-tenant"]) problems.push(`${variant} passed the client's x-tollgate-tenant`);
  }
  const gatewayOnly = onlyIn(names(seen.gateway), names(seen.hygienic));
  const hygienicOnly = onlyIn(names(seen.hygienic), names(seen.gateway));
  if (hygienicOnly.length > 0) problems.push(`the hygienic forward passes names the gateway does not: ${hygienicOnly.join(", ")}`);
  if (gatewayOnly.length > 0) notes.push(`the origin also gets from the gateway: ${gatewayOnly.join(", ")}`);

  // The admitted answer: the gateway's extra headers (RateLimit, …) are its own work.
  const admitted = { gateway: await get(url, "/bench/item?x=1", { ...auth, "cf-connecting-ip": CLIENT_ADDRESS }), hygienic: await get(url, "/bench/item?x=1", { ...auth, "cf-connecting-ip": CLIENT_ADDRESS, "x-bench-variant": "hygienic" }) };
  const answerExtra = onlyIn(names(admitted.gateway.headers), names(admitted.hygienic.headers));
  if (answerExtra.length > 0) notes.push(`the gateway's admitted answer also carries: ${answerExtra.join(", ")}`);
  const controlExtra = onlyIn(names(admitted.hygienic.headers), names(admitted.gateway.headers));
  if (controlExtra.length > 0) problems.push(`the hygienic forward's answer carries names the gateway's does not: ${controlExtra.join(", ")}`);

  // The refusals: same status, same header names, a body of about the same size.
  const refusal = async (label, gatewayHeaders, controlVariant, expect) => {
    const g = await get(url, "/bench/item?x=1", { ...gatewayHeaders, "x-bench-variant": "gateway" });
    const c = await get(url, "/bench/item?x=1", { ...gatewayHeaders, "x-bench-variant": controlVariant });
    if (g.status !== expect || c.status !== expect) problems.push(`${label}: the gateway answered ${g.status}, the control ${c.status} (expected ${expect})`);
    const missing = onlyIn(names(g.headers), names(c.headers));
    const extra = onlyIn(names(c.headers), names(g.headers));
    if (missing.length > 0) problems.push(`${label}: the control's answer lacks ${missing.join(", ")}`);
    if (extra.length > 0) notes.push(`${label}: the control's answer also carries ${extra.join(", ")}`);
    const ratio = c.body.length / Math.max(1, g.body.length);
    if (ratio < 0.85) problems.push(`${label}: the control's body is ${c.body.length} B against the gateway's ${g.body.length} B`);
    return { status: g.status, gateway_body_bytes: g.body.length, control_body_bytes: c.body.length, header_names: names(g.headers) };
  };
  // The over-its-limit key's first request is admitted: spend it first.
  await get(url, "/bench/item?x=1", { authorization: `Bearer ${keys.exhausted}`, "cf-connecting-ip": CLIENT_ADDRESS });
  const madeUp = () => `Bearer tg_${randomBytes(6).toString("hex")}_${randomBytes(16).toString("hex")}`;
  const answers = {
    rate_limited: await refusal("429", { authorization: `Bearer ${keys.exhausted}`, "cf-connecting-ip": CLIENT_ADDRESS }, "answer-429", 429),
    invalid_key: await refusal("401", { authorization: madeUp(), "cf-connecting-ip": "198.51.100.7" }, "answer-401", 401),
  };

  // One log line per admitted request, from each.
  const lines = {};
  for (const variant of ["gateway", "hygienic"]) {
    const from = statSync(stdoutPath).size;
    await get(url, "/bench/item?x=1", { ...auth, "cf-connecting-ip": CLIENT_ADDRESS, "x-bench-variant": variant });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const written = linesSince(stdoutPath, from).filter((l) => l.includes('"event":"request"'));
    if (written.length !== 1) problems.push(`${variant}: an admitted request wrote ${written.length} request-log lines to stdout, not 1`);
    lines[variant] = written[0] ?? null;
  }
  if (lines.gateway && lines.hygienic && Math.abs(lines.gateway.length - lines.hygienic.length) > 24) notes.push(`log lines of ${lines.gateway.length} and ${lines.hygienic.length} characters`);

  if (problems.length > 0) throw new Error(`a control does not do the gateway's job:\n- ${problems.join("\n- ")}`);
  return { notes, answers, log_lines: lines };
}
