// Streams (issue 14): messages per second through the gateway
// against a direct connection to the same origin, and the gateway isolate's
// JS heap per open stream with 1,000 streams open.
//
// The origin is a WebSocket echo on its own thread (ws-origin.mjs); the load
// is closed loop from this process: each connection keeps `window` messages
// of `payloadBytes` in flight and sends one more for every echo. Targets:
// (direct) the origin itself, (relay) a bare Worker that holds both ends and
// passes messages on with no checks (bench/bare-ws-relay.js: the price of
// holding both ends at all), (gateway) Tollgate with a cached key and no
// `message` limits (the default: nothing is charged per message), (charged)
// Tollgate with a `message` limit that never refuses (one admission per
// client message). Rounds interleave the targets, so background load falls
// on all of them alike.
//
// Memory: the heap after a full GC (through the inspector, as the abuse
// bench reads it) before and with 1,000 streams of one key open, each having
// passed one message; and once more after they all closed, to show the
// isolate gives it back.
import { join } from "node:path";
import WebSocket from "ws";
import { onCleanup } from "./cleanup.mjs";
import { heapAfterGc, inspect } from "./cpu-profile.mjs";
import { tollgateConfig } from "./gateway-config.mjs";
import { admin, applyMigrations, freePort, memoryOf, startWorker, waitHealthy } from "./instances.mjs";
import { median, round, spread } from "./stats.mjs";
import { startWsOriginThread } from "./ws-origin.mjs";

/** Settings of the full run and of `--quick`. */
export const STREAMS_SETTINGS = {
  full: { throughput: { connections: 8, window: 16, payloadBytes: 64, warmupS: 1, durationS: 4, rounds: 3 }, memory: { streams: 1000, batch: 50 } },
  quick: { throughput: { connections: 4, window: 8, payloadBytes: 64, warmupS: 0.5, durationS: 1, rounds: 1 }, memory: { streams: 200, batch: 50 } },
};

/**
 * The whole part: the echo origin, the gateway bundle in its own workerd
 * (with an inspector), the figures; everything it started is stopped on the way out.
 */
export async function benchStreams({ root, bundle, compat, token, stateDir, settings, log }) {
  const origin = await startWsOriginThread();
  const unregister = onCleanup(() => origin.close());
  const inspectorPort = await freePort();
  let worker = null;
  let relay = null;
  try {
    relay = await startWorker({ name: "ws-relay", scriptPath: join(root, "bench", "bare-ws-relay.js"), bindings: { ORIGIN_URL: `http://127.0.0.1:${origin.port}` }, compat });
    worker = await startWorker({
      name: "streams",
      scriptPath: bundle,
      gateway: true,
      stateDir: join(stateDir, "streams"),
      compat,
      bindings: { ORIGIN_URL: `http://127.0.0.1:${origin.port}`, ADMIN_TOKEN: token, TOLLGATE: tollgateConfig("enforce", STREAMS_CONFIG) },
      extra: { inspectorPort },
    });
    await applyMigrations(root, worker);
    await waitHealthy(worker.url);
    return await runStreams({ worker, relayUrl: relay.url, inspectorPort, token, wsOriginUrl: `ws://127.0.0.1:${origin.port}`, settings, log });
  } finally {
    await relay?.stop();
    await worker?.stop();
    unregister();
    await origin.close();
  }
}

/** A limit nobody reaches: a billion a second. */
const HUGE = [{ count: 1_000_000_000, window_s: 1 }];
/** Stream rent and requests never refuse; `message` is left unlimited (the default) or given a limit that never refuses. */
const STREAM_TENANT = { limits: { request: { key: HUGE, tenant: HUGE }, stream_rent: { key: HUGE, tenant: HUGE } } };
const CHARGED_TENANT = { limits: { ...STREAM_TENANT.limits, message: { key: HUGE, tenant: HUGE } } };
/** The gateway's streams config: room for the memory run's streams on one key. */
export const STREAMS_CONFIG = { streams: { per_credential: 5000 } };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function connect(url, headers) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false });
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => reject(new Error(`${url} answered ${res.statusCode} to the upgrade`)));
  });
}

function closeAll(sockets) {
  return Promise.all(
    sockets.map(
      (ws) =>
        new Promise((resolve) => {
          if (ws.readyState === WebSocket.CLOSED) return resolve();
          ws.once("close", resolve);
          ws.close(1000, "bench done");
          setTimeout(() => {
            ws.terminate();
            resolve();
          }, 5000).unref();
        }),
    ),
  );
}

/** Echoed messages per second over `durationS`, after `warmupS`, closed loop. */
async function messageRate(target, s) {
  const payload = "x".repeat(s.payloadBytes);
  const sockets = await Promise.all(Array.from({ length: s.connections }, () => connect(target.url, target.headers)));
  let counting = false;
  let running = true;
  let echoed = 0;
  for (const ws of sockets) {
    ws.on("message", () => {
      if (counting) echoed++;
      if (running) ws.send(payload);
    });
    for (let i = 0; i < s.window; i++) ws.send(payload);
  }
  await sleep(s.warmupS * 1000);
  counting = true;
  const t0 = performance.now();
  await sleep(s.durationS * 1000);
  counting = false;
  const elapsedS = (performance.now() - t0) / 1000;
  running = false;
  await closeAll(sockets);
  return echoed / elapsedS;
}

/** Opens `n` streams, `batch` at a time, each passing one message; resolves the sockets. */
async function openStreams(url, headers, n, batch) {
  const sockets = [];
  for (let i = 0; i < n; i += batch) {
    const opened = await Promise.all(
      Array.from({ length: Math.min(batch, n - i) }, async () => {
        const ws = await connect(url, headers);
        await new Promise((resolve) => {
          ws.once("message", resolve);
          ws.send("hello");
        });
        return ws;
      }),
    );
    sockets.push(...opened);
  }
  return sockets;
}

const MIB = 1024 * 1024;

/**
 * worker: a gateway started with inspectorPort and STREAMS_CONFIG; wsOriginUrl:
 * the echo's ws:// URL. Returns the figures for bench/results.
 */
export async function runStreams({ worker, relayUrl, inspectorPort, token, wsOriginUrl, settings, log }) {
  await admin(worker.url, token, "PUT", "/tenants/streams", STREAM_TENANT);
  const key = (await admin(worker.url, token, "POST", "/tenants/streams/keys", { name: "bench streams" })).key;
  await admin(worker.url, token, "PUT", "/tenants/streams-charged", CHARGED_TENANT);
  const chargedKey = (await admin(worker.url, token, "POST", "/tenants/streams-charged/keys", { name: "bench streams (charged)" })).key;
  const gatewayWs = `${worker.url.replace(/^http/, "ws")}/bench/ws`;
  const targets = {
    direct: { url: `${wsOriginUrl}/bench/ws`, headers: {} },
    relay: { url: `${relayUrl.replace(/^http/, "ws")}/bench/ws`, headers: {} },
    gateway: { url: gatewayWs, headers: { authorization: `Bearer ${key}` } },
    charged: { url: gatewayWs, headers: { authorization: `Bearer ${chargedKey}` } },
  };

  const t = settings.throughput;
  log(`streams: messages/s, ${t.rounds} rounds × 4 targets × ${t.durationS} s, ${t.connections} connections × ${t.window} in flight, ${t.payloadBytes}-byte text messages`);
  const perRound = { direct: [], relay: [], gateway: [], charged: [] };
  for (let round_ = 0; round_ < t.rounds; round_++) {
    for (const name of Object.keys(targets)) {
      const rate = await messageRate(targets[name], t);
      perRound[name].push(rate);
      log(`  round ${round_ + 1}: ${name} ${Math.round(rate)} messages/s`);
    }
  }
  const summary = (values) => ({ median: round(median(values), 0), ...mapSpread(spread(values)), per_round: values.map((v) => round(v, 0)) });
  const ratio = (a, b) => perRound[a].map((v, i) => v / perRound[b][i]);
  const throughput = {
    settings: t,
    messages_per_s: { direct: summary(perRound.direct), relay: summary(perRound.relay), gateway: summary(perRound.gateway), charged: summary(perRound.charged) },
    ratios: {
      "relay/direct": ratioOf(ratio("relay", "direct")),
      "gateway/direct": ratioOf(ratio("gateway", "direct")),
      "charged/direct": ratioOf(ratio("charged", "direct")),
      "gateway/relay": ratioOf(ratio("gateway", "relay")),
      "charged/relay": ratioOf(ratio("charged", "relay")),
    },
  };

  const m = settings.memory;
  log(`streams: gateway JS heap with ${m.streams} open streams of one key`);
  const session = await inspect(inspectorPort, worker.name);
  try {
    await closeAll(await openStreams(targets.gateway.url, targets.gateway.headers, 20, 20));
    await sleep(500);
    const before = await heapAfterGc(session);
    const rssBefore = memoryOf(worker.pid)?.rss_kib ?? null;
    const t0 = performance.now();
    const sockets = await openStreams(targets.gateway.url, targets.gateway.headers, m.streams, m.batch);
    const openS = (performance.now() - t0) / 1000;
    const open = await heapAfterGc(session);
    const rssOpen = memoryOf(worker.pid)?.rss_kib ?? null;
    await closeAll(sockets);
    await sleep(1000);
    const after = await heapAfterGc(session);
    const memory = {
      streams: m.streams,
      open_s: round(openS, 2),
      js_heap_used_before_mib: round(before.used_bytes / MIB, 2),
      js_heap_used_open_mib: round(open.used_bytes / MIB, 2),
      js_heap_used_after_close_mib: round(after.used_bytes / MIB, 2),
      js_heap_bytes_per_stream: Math.round((open.used_bytes - before.used_bytes) / m.streams),
      workerd_rss_before_kib: rssBefore,
      workerd_rss_open_kib: rssOpen,
      workerd_rss_kib_per_stream: rssBefore === null || rssOpen === null ? null : round((rssOpen - rssBefore) / m.streams, 1),
    };
    log(`  JS heap ${memory.js_heap_used_before_mib} → ${memory.js_heap_used_open_mib} MiB with ${m.streams} open (${memory.js_heap_bytes_per_stream} B per stream) → ${memory.js_heap_used_after_close_mib} MiB after they closed; workerd RSS +${memory.workerd_rss_kib_per_stream} KiB per stream`);
    return { throughput, memory };
  } finally {
    session.close();
  }
}

function mapSpread(s) {
  return { min: round(s?.min ?? null, 0), max: round(s?.max ?? null, 0) };
}

function ratioOf(values) {
  const s = spread(values);
  return { median: round(median(values)), min: round(s?.min ?? null), max: round(s?.max ?? null), per_round: values.map((v) => round(v)) };
}

/** The Markdown lines for the summary. */
export function streamsSummary(r) {
  const mps = r.throughput.messages_per_s;
  const ratios = r.throughput.ratios;
  const mem = r.memory;
  return [
    "### Streams",
    "",
    "| target | messages/s (median, min–max) | vs direct | vs bare relay |",
    "| --- | ---: | ---: | ---: |",
    `| direct to the origin | ${mps.direct.median} (${mps.direct.min}–${mps.direct.max}) | 1 | |`,
    `| bare relay Worker (both ends, no checks) | ${mps.relay.median} (${mps.relay.min}–${mps.relay.max}) | ${ratios["relay/direct"].median} | 1 |`,
    `| through Tollgate, no message limits | ${mps.gateway.median} (${mps.gateway.min}–${mps.gateway.max}) | ${ratios["gateway/direct"].median} | ${ratios["gateway/relay"].median} |`,
    `| through Tollgate, each message charged | ${mps.charged.median} (${mps.charged.min}–${mps.charged.max}) | ${ratios["charged/direct"].median} | ${ratios["charged/relay"].median} |`,
    "",
    `${mem.streams} open streams: gateway JS heap ${mem.js_heap_used_before_mib} → ${mem.js_heap_used_open_mib} MiB (${mem.js_heap_bytes_per_stream} B per stream), ${mem.js_heap_used_after_close_mib} MiB after they closed; workerd RSS +${mem.workerd_rss_kib_per_stream} KiB per stream.`,
  ].join("\n");
}
