// The layers of src/, as rules `npm run lint:deps` checks (src/README.md draws
// them). Imports flow one way, from the top down:
//
//   index.ts, app.ts            the Worker, the Hono app for health and admin;
//   alerts/deliver.ts           the alerts queue's handler
//   admin/, console/serve.ts    the admin API and the console's assets
//   runtime.ts                  one runtime per config: builds the tables, caches and the gateway
//   gateway.ts                  the data plane: the steps in order
//   limits/, alerts/, log/      the steps, the alerts they raise, the log lines they write
//   cache/, identity/           per-isolate caches; who is asking
//   exchange.ts, config.ts      what one request carries; the parsed config
//   proxy/                      the origin request and response
//   durable/, db/               Durable Objects; D1 through drizzle
//   errors.ts, log/logger.ts,   problem+json; the one logger;
//   log/request-log-policy.ts   which log lines are written
//   engine/, utils/             pure decisions; crypto, Bearer, waitUntil
//
// Type imports count like any other: swc parses the sources as written, so an
// `import type` that TypeScript would erase is still an edge here.
"use strict";

/** Files that sit above the steps: nothing below may name them. alerts/deliver.ts is the queue's handler, beside app.ts. */
const TOP = "^src/(index|app|runtime|gateway)\\.ts$|^src/(admin|console|cli)/|^src/alerts/deliver\\.ts$";

/** The log lines built from an exchange (request-log.ts, stream-log.ts, ...): the logger and the request-log policy sit low. */
const LOG_LINES = "^src/log/(?!(logger|request-log-policy)\\.ts$)";

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "No import cycle of any length, type imports included: a cycle means no file in it can be read or changed alone.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "engine-is-pure",
      severity: "error",
      comment: "engine/ decides from plain values: it imports nothing of the project outside engine/.",
      from: { path: "^src/engine/" },
      to: { path: "^src/", pathNot: "^src/engine/" },
    },
    {
      name: "utils-are-leaves",
      severity: "error",
      comment: "utils/ (crypto, Bearer, waitUntil) imports nothing of the project outside utils/.",
      from: { path: "^src/utils/" },
      to: { path: "^src/", pathNot: "^src/utils/" },
    },
    {
      name: "leaf-helpers",
      severity: "error",
      comment: "errors.ts, the logger and the request-log policy (which lines are written) are used everywhere, so they name nothing but engine/ and utils/.",
      from: { path: "^src/(errors\\.ts|log/logger\\.ts|log/request-log-policy\\.ts)$" },
      to: { path: "^src/", pathNot: "^src/(engine|utils)/" },
    },
    {
      name: "durable-and-db-are-low",
      severity: "error",
      comment: "durable/ and db/ take only engine/, utils/, errors.ts and the logger (and their own folder).",
      from: { path: "^src/(durable|db)/" },
      to: { path: "^src/", pathNot: ["^src/(engine|utils)/", "^src/errors\\.ts$", "^src/log/(logger|request-log-policy)\\.ts$", "^src/$1/"] },
    },
    {
      name: "proxy-is-low",
      severity: "error",
      comment: "proxy/ builds the origin request and reads its response: it names no request state (exchange.ts, config.ts) nor anything above.",
      from: { path: "^src/proxy/" },
      to: { path: `${TOP}|^src/(limits|alerts|cache|identity)/|${LOG_LINES}|^src/(exchange|config)\\.ts$` },
    },
    {
      name: "exchange-and-config-are-low",
      severity: "error",
      comment: "The types every layer shares (exchange.ts) and the config name nothing of the steps, caches or runtime above them.",
      from: { path: "^src/(exchange|config)\\.ts$" },
      to: { path: `${TOP}|^src/(limits|alerts|cache)/|${LOG_LINES}` },
    },
    {
      name: "cache-and-identity-below-limits",
      severity: "error",
      comment: "cache/ and identity/ never import limits/, alerts/, the request log, the gateway or the runtime.",
      from: { path: "^src/(cache|identity)/" },
      to: { path: `${TOP}|^src/(limits|alerts)/|${LOG_LINES}` },
    },
    {
      name: "steps-below-gateway",
      severity: "error",
      comment: "limits/, alerts/ and log/ are built or called by the gateway's steps: they never name it, the runtime or the app.",
      from: { path: "^src/(limits|alerts|log)/", pathNot: "^src/alerts/deliver\\.ts$" },
      to: { path: TOP },
    },
    {
      name: "gateway-below-runtime",
      severity: "error",
      comment: "The gateway is compiled by the runtime from the parts it declares (GatewayRuntime); it never names runtime.ts.",
      from: { path: "^src/gateway\\.ts$" },
      to: { path: "^src/(index|app|runtime)\\.ts$|^src/(admin|console|cli)/" },
    },
    {
      name: "runtime-below-app",
      severity: "error",
      from: { path: "^src/runtime\\.ts$" },
      to: { path: "^src/(index|app)\\.ts$|^src/(admin|console|cli)/" },
    },
    {
      name: "admin-below-app",
      severity: "error",
      from: { path: "^src/(admin|console)/" },
      to: { path: "^src/(index|app)\\.ts$|^src/cli/" },
    },
    {
      name: "cli-is-a-client",
      severity: "error",
      comment: "The tollgate command talks to the admin API over HTTP: it imports nothing of src/ outside src/cli/.",
      from: { path: "^src/cli/" },
      to: { path: "^src/", pathNot: "^src/cli/" },
    },
    {
      name: "console-assets-stand-alone",
      severity: "error",
      comment: "The console's browser code is served as it is: it imports nothing of src/ outside src/console/public/.",
      from: { path: "^src/console/public/" },
      to: { path: "^src/", pathNot: "^src/console/public/" },
    },
  ],
  options: {
    // swc, not tsc: the project's TypeScript 7 has no compiler API to parse with.
    parser: "swc",
    // Count `import type` too (swc parses the source as written, so nothing is elided).
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^src/.*\\.d\\.ts$" },
    enhancedResolveOptions: {
      extensions: [".ts", ".mjs", ".js"],
      conditionNames: ["import", "require", "node", "default", "types"],
    },
    moduleSystems: ["es6"],
  },
};
