// The CPU part's load generator (gateway-cpu.mjs), on its own thread: keeps
// its keep-alive connections to every target open across runs, so a run can
// be a slice of a few hundred requests and the cases can be interleaved
// finely (the machine's load changes from second to second; a case measured
// in many short slices spread over the part sees the same load as every
// other). Each message {id, url, path, headers?, kind: "get"|"flood"|"tokens",
// tokens?, amount, connections} sends `amount` requests, `connections` at a
// time, and answers {id, answers, status, errors}; "close" ends the thread.
import { randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { parentPort } from "node:worker_threads";

const KEY_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const agents = new Map();

function agentFor(url, connections) {
  const key = `${url}|${connections}`;
  let agent = agents.get(key);
  if (agent === undefined) {
    agent = new Agent({ keepAlive: true, maxSockets: connections });
    agents.set(key, agent);
  }
  return agent;
}

function randomBase32(chars) {
  let out = "";
  for (const b of randomBytes(chars)) out += KEY_ALPHABET[b & 31];
  return out;
}

function randomIpv4() {
  const b = randomBytes(4);
  return `${11 + (b[0] % 212)}.${b[1]}.${b[2]}.${1 + (b[3] % 254)}`;
}

/** The headers of request number i of a run. */
function headersFor(spec, i) {
  if (spec.kind === "flood") return { ...spec.headers, authorization: `Bearer tg_${randomBase32(12)}_${randomBase32(32)}`, "cf-connecting-ip": randomIpv4() };
  if (spec.kind === "tokens") return { ...spec.headers, authorization: `Bearer ${spec.tokens[i]}` };
  return spec.headers ?? {};
}

function one(spec, agent, i) {
  const url = new URL(spec.path, spec.url);
  return new Promise((resolve) => {
    const req = request(url, { agent, method: "GET", headers: headersFor(spec, i) }, (res) => {
      res.on("data", () => {});
      res.on("end", () => resolve(res.statusCode));
      res.on("error", () => resolve("error"));
    });
    req.on("error", () => resolve("error"));
    req.end();
  });
}

async function run(spec) {
  const agent = agentFor(spec.url, spec.connections);
  const status = {};
  let next = 0;
  let errors = 0;
  const loop = async () => {
    while (next < spec.amount) {
      const i = next++;
      const code = await one(spec, agent, i);
      if (code === "error") errors += 1;
      else status[code] = (status[code] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: spec.connections }, loop));
  return { answers: spec.amount - errors, status, errors };
}

parentPort.on("message", async (msg) => {
  if (msg === "close") {
    for (const agent of agents.values()) agent.destroy();
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage({ id: msg.id, ...(await run(msg)) });
  } catch (err) {
    parentPort.postMessage({ id: msg.id, error: String(err?.message ?? err) });
  }
});
