// A TOLLGATE config in a file of its own, for `npm start -- --config <file>`
// (or TOLLGATE_CONFIG=<file>): JSON, or JSONC (comments and trailing commas),
// holding what wrangler.toml's [vars.TOLLGATE] holds. It is checked by the
// gateway's own validation (src/config.ts, loaded through tsx, a dev
// dependency) before anything starts, and every problem is reported with
// its path, not only the first one the Worker would name.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * Blanks out comments and trailing commas, keeping every other character
 * (and every newline) where it was, so JSON.parse's positions still point
 * into the file as written.
 * @param {string} text
 */
export function stripJsonc(text) {
  const out = text.split("");
  let i = 0;
  /** Index of the last comma outside a string whose next significant character is not yet known. */
  let pendingComma = -1;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      pendingComma = -1;
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      i++;
    } else if (ch === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") out[i++] = " ";
    } else if (ch === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end === -1 ? text.length : end + 2;
      for (; i < stop; i++) if (text[i] !== "\n") out[i] = " ";
    } else if (ch === ",") {
      pendingComma = i++;
    } else if (ch === "}" || ch === "]") {
      if (pendingComma !== -1) out[pendingComma] = " ";
      pendingComma = -1;
      i++;
    } else {
      if (!/\s/.test(ch)) pendingComma = -1;
      i++;
    }
  }
  return out.join("");
}

/** 1-based line and column of a character offset. */
function lineAndColumn(text, offset) {
  const before = text.slice(0, offset).split("\n");
  return `line ${before.length}, column ${before[before.length - 1].length + 1}`;
}

/**
 * Where JSON text first goes wrong: the offset of the first character no
 * JSON value can have there (Node 20's JSON.parse often names no position).
 * Called only on text JSON.parse refused.
 * @param {string} text
 */
function firstErrorOffset(text) {
  let i = 0;
  const space = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const fail = () => {
    throw i;
  };
  const expect = (ch) => (text[i] === ch ? i++ : fail());
  const string = () => {
    expect('"');
    while (i < text.length && text[i] !== '"') {
      if (text[i] === "\n") fail();
      i += text[i] === "\\" ? 2 : 1;
    }
    expect('"');
  };
  /** An object's members or an array's items, from the opening bracket at i to `close`. */
  const sequence = (close, item) => {
    i++;
    space();
    if (text[i] === close) return void i++;
    for (;;) {
      item();
      space();
      if (text[i] === ",") i++;
      else return void expect(close);
    }
  };
  const member = () => {
    space();
    string();
    space();
    expect(":");
    value();
  };
  const value = () => {
    space();
    const ch = text[i];
    if (ch === "{") return sequence("}", member);
    if (ch === "[") return sequence("]", value);
    if (ch === '"') return string();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i));
    if (literal === null) fail();
    i += literal[0].length;
  };
  try {
    value();
    space();
    return i;
  } catch (offset) {
    return /** @type {number} */ (offset);
  }
}

/**
 * @param {string} text the file's contents
 * @returns {{ ok: true, value: unknown } | { ok: false, problem: string }}
 */
export function parseJsonc(text) {
  const stripped = stripJsonc(text.replace(/^\uFEFF/, ""));
  try {
    return { ok: true, value: JSON.parse(stripped) };
  } catch {
    const offset = firstErrorOffset(stripped);
    const found = offset >= stripped.length ? "the file ends" : `unexpected ${JSON.stringify(stripped[offset])}`;
    return { ok: false, problem: `not valid JSON at ${lineAndColumn(stripped, offset)}: ${found}` };
  }
}

/** A zod issue's path as the gateway names fields (`routes.0.charge_on_status.1`); an unknown field names itself. */
function issuePath(issue) {
  const path = issue.path.map(String);
  if (issue.code === "unrecognized_keys") return issue.keys.map((key) => [...path, String(key)].join("."));
  return [path.length > 0 ? path.join(".") : "TOLLGATE"];
}

/**
 * Every problem of a TOLLGATE value, each as `{path, message}`: first the
 * schema's (all of them), then, once the schema holds, the checks the
 * gateway makes after it (parseConfig: addresses, origins, routes' origins).
 * @param {string} root the checkout (src/config.ts is read from it)
 * @param {unknown} value
 * @returns {Promise<{ path: string, message: string }[]>}
 */
export async function configProblems(root, value) {
  const { tsImport } = await import("tsx/esm/api");
  const config = await tsImport(pathToFileURL(resolve(root, "src/config.ts")).href, import.meta.url);
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [{ path: "TOLLGATE", message: "must be a JSON object" }];
  const parsed = config.configSchema.safeParse(value);
  if (!parsed.success) return parsed.error.issues.flatMap((issue) => issuePath(issue).map((path) => ({ path, message: issue.message })));
  const compiled = config.parseConfig(value);
  return compiled.ok ? [] : [{ path: compiled.field, message: compiled.message }];
}

/**
 * Reads and validates a config file.
 * @param {string} root
 * @param {string} file as the operator named it (relative to the working directory)
 * @returns {Promise<{ ok: true, json: string } | { ok: false, report: string }>} the config as one line of JSON, or what to print
 */
export async function loadConfigFile(root, file) {
  let text;
  try {
    text = readFileSync(resolve(file), "utf8");
  } catch (error) {
    const code = /** @type {{ code?: string }} */ (error).code;
    return { ok: false, report: `${file}: cannot be read (${code === "ENOENT" ? "no such file" : (code ?? "error")})` };
  }
  const parsed = parseJsonc(text);
  if (!parsed.ok) return { ok: false, report: `${file}: ${parsed.problem}` };
  const problems = await configProblems(root, parsed.value);
  if (problems.length > 0) {
    const lines = problems.map((p) => `  ${p.path}: ${p.message}`);
    return { ok: false, report: `${file} is not a valid TOLLGATE config (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n${lines.join("\n")}` };
  }
  return { ok: true, json: JSON.stringify(parsed.value) };
}
