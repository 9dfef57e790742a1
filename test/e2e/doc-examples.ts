// The shell examples of README.md and docs/*.md, read as a reader meets them,
// and the rule their claimed output is checked by (docs-examples.test.ts runs
// them). Pure: no process, no gateway.
//
// In a document:
// - Every ```sh (or bash, shell) block runs, in document order, in one shell
//   per document, unless a marker right before it says why it cannot:
//       <!-- doc-test: skip: <why> -->
//   A block ends with its last command's status 0, or with the status a marker
//   names (`<!-- doc-test: exit 1 -->`).
// - Its claimed output is the fenced block right after it (only blank lines
//   between; info string "", "text", "json", "http" or "csv"), and every
//   `# → <output>` comment inside it.
// - `…` in a claimed output stands for any text; a line holding only `…`
//   for any number of lines. A plain output's other lines must match whole
//   lines of what the block printed, one after the other; a `json` output is
//   compared without the spaces and line breaks outside its strings (so it
//   may be wrapped for reading), and each `# →` line is looked for in order.
// - `<!-- doc-test: bind <literal> = "<field>" -->` (or `= <field>` for the
//   CLI's `field  value` lines) takes that value from the output of the block
//   run last and puts it in place of <literal> in every later block and
//   claimed output of the document: a key id the reader copies from an answer.

export interface DocBlock {
  readonly kind: "block";
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly code: string;
  /** Why it does not run, or null. */
  readonly skip: string | null;
  readonly exitCode: number;
  /** The fenced block after it, or null. */
  readonly output: { readonly lang: string; readonly text: string; readonly line: number } | null;
  /** The `# →` claims, in order. */
  readonly arrows: readonly string[];
}

export interface DocBind {
  readonly kind: "bind";
  readonly file: string;
  readonly line: number;
  readonly literal: string;
  /** `"id"` (a JSON field) or `id` (a CLI `field  value` line). */
  readonly field: string;
  readonly json: boolean;
}

export type DocStep = DocBlock | DocBind;

const SHELL_LANGS = new Set(["sh", "bash", "shell"]);
const OUTPUT_LANGS = new Set(["", "text", "json", "http", "csv"]);
const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/;
const MARKER = /^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$/;
/** An output line that stands for any number of lines. */
export const ANY_LINES = "…";

interface Fence {
  readonly lang: string;
  readonly line: number;
  /** Index in `lines` of the opening and closing fence. */
  readonly open: number;
  readonly close: number;
  readonly text: string;
}

function fencesOf(lines: readonly string[]): Fence[] {
  const fences: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (open === null) continue;
    const [, indent, marker] = open as unknown as [string, string, string, string];
    let close = i + 1;
    while (close < lines.length && !new RegExp(`^\\s*${marker[0]}{${marker.length},}\\s*$`).test(lines[close]!)) close++;
    const body = lines.slice(i + 1, close).map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line.trimStart()));
    fences.push({ lang: open[3] ?? "", line: i + 1, open: i, close, text: body.join("\n") });
    i = close;
  }
  return fences;
}

/** The `# → …` claims of a shell block; a claim continues on the next comment lines indented past the arrow. */
export function arrowClaims(code: string): string[] {
  const claims: string[] = [];
  let open = false;
  for (const line of code.split("\n")) {
    const arrow = /^\s*#\s*→\s?(.*)$/.exec(line);
    if (arrow !== null) {
      claims.push(arrow[1]!.trimEnd());
      open = true;
      continue;
    }
    const more = open ? /^\s*#\s{2,}(\S.*)$/.exec(line) : null;
    if (more !== null) claims[claims.length - 1] += more[1]!.trimEnd();
    else open = false;
  }
  return claims;
}

/** Every shell block and bind marker of a Markdown document, in order. */
export function readDocSteps(file: string, markdown: string): DocStep[] {
  const lines = markdown.split("\n");
  const fences = fencesOf(lines);
  const inFence = new Set<number>();
  for (const fence of fences) for (let i = fence.open; i <= fence.close; i++) inFence.add(i);
  const steps: { at: number; step: DocStep }[] = [];

  for (let i = 0; i < lines.length; i++) {
    if (inFence.has(i)) continue;
    const marker = MARKER.exec(lines[i]!);
    const bind = marker === null ? null : /^bind\s+(\S+)\s*=\s*("?)([\w.-]+)\2$/.exec(marker[1]!);
    if (bind !== null) steps.push({ at: i, step: { kind: "bind", file, line: i + 1, literal: bind[1]!, field: bind[3]!, json: bind[2] === '"' } });
  }

  fences.forEach((fence, index) => {
    if (!SHELL_LANGS.has(fence.lang)) return;
    // Markers: the lines right before the fence (blank lines allowed).
    let skip: string | null = null;
    let exitCode = 0;
    for (let i = fence.open - 1; i >= 0; i--) {
      const line = lines[i]!;
      if (line.trim() === "") continue;
      const marker = MARKER.exec(line);
      if (marker === null) break;
      const text = marker[1]!;
      if (text.startsWith("skip:")) skip = text.slice("skip:".length).trim();
      else if (/^exit \d+$/.test(text)) exitCode = Number(text.slice(5));
    }
    const next = fences[index + 1];
    const between = next === undefined ? [] : lines.slice(fence.close + 1, next.open);
    const output = next !== undefined && OUTPUT_LANGS.has(next.lang) && between.every((line) => line.trim() === "") ? { lang: next.lang, text: next.text, line: next.line } : null;
    steps.push({ at: fence.open, step: { kind: "block", file, line: fence.line, code: fence.text, skip, exitCode, output, arrows: arrowClaims(fence.text) } });
  });
  return steps.sort((a, b) => a.at - b.at).map((s) => s.step);
}

const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

/** What a terminal shows of a process's output: no colour codes, no carriage returns. */
export function plainOutput(text: string): string {
  return text.replace(ANSI, "").replace(/\r/g, "");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A claimed piece of output as a pattern: `…` is any text on one line. */
function claimPattern(claim: string): string {
  return claim.split("…").map(escapeRegExp).join("[^\\n]*?");
}

/** JSON text without the whitespace outside its strings (`…` kept where it is). */
export function squeezeJson(text: string): string {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      out += ch;
      if (ch === "\\") out += text[++i] ?? "";
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
      out += ch;
    } else if (!/\s/.test(ch)) {
      out += ch;
    }
  }
  return out;
}

export type MatchResult = { ok: true } | { ok: false; reason: string };

/** Lines of a plain claimed output against the lines printed: contiguous, `…` lines for gaps, anywhere in the output. */
function matchLines(claimed: readonly string[], printed: readonly string[]): MatchResult {
  const patterns = claimed.map((line) => (line.trim() === ANY_LINES ? null : new RegExp(`^${claimPattern(line.trimEnd())}$`)));
  // Backtracking over where each run after a `…` starts; outputs are short.
  const from = (p: number, l: number, anchored: boolean): boolean => {
    if (p === patterns.length) return true;
    const pattern = patterns[p] ?? null;
    if (pattern === null) return from(p + 1, l, false);
    for (let start = l; start < printed.length; start++) {
      if (pattern.test(printed[start]!.trimEnd()) && from(p + 1, start + 1, true)) return true;
      if (anchored) return false;
    }
    return false;
  };
  if (from(0, 0, false)) return { ok: true };
  // Name the first claimed line that matches nowhere, to say what drifted.
  const missing = claimed.find((line, i) => patterns[i] !== null && !printed.some((out) => patterns[i]!.test(out.trimEnd())));
  return { ok: false, reason: missing === undefined ? "the claimed lines are all printed, but not in this order or not next to each other" : `no printed line matches ${JSON.stringify(missing)}` };
}

/** Claims looked for one after the other, anywhere in `text`. */
function matchInOrder(claims: readonly string[], text: string): MatchResult {
  let at = 0;
  for (const claim of claims) {
    const found = new RegExp(claimPattern(claim)).exec(text.slice(at));
    if (found === null) return { ok: false, reason: `not printed (after what matched before it): ${JSON.stringify(claim)}` };
    at += found.index + found[0].length;
  }
  return { ok: true };
}

/**
 * Checks a block's claimed output (its fenced output and its `# →` lines)
 * against what it printed.
 */
export function matchClaims(block: Pick<DocBlock, "output" | "arrows">, printed: string): MatchResult {
  const text = plainOutput(printed);
  if (block.output !== null) {
    const result =
      block.output.lang === "json"
        ? matchInOrder(
            // A line that starts with a space continues the JSON value above it.
            block.output.text.split(/\n(?!\s)/).map((value) => squeezeJson(value)).filter((value) => value !== ""),
            squeezeJson(text),
          )
        : matchLines(block.output.text.split("\n"), text.split("\n"));
    if (!result.ok) return result;
  }
  return matchInOrder(block.arrows, text);
}

/** The value a bind marker names, from a block's output; null when it is not there. */
export function boundValue(bind: Pick<DocBind, "field" | "json">, printed: string): string | null {
  const text = plainOutput(printed);
  const found = bind.json ? new RegExp(`"${escapeRegExp(bind.field)}":\\s*"?([^",}\\s]+)`).exec(text) : new RegExp(`^${escapeRegExp(bind.field)}\\s+(\\S+)\\s*$`, "m").exec(text);
  return found?.[1] ?? null;
}

/** The first fenced block under a heading (`## Quick start`): an output a page shows without a shell block of its own before it. */
export function firstFenceUnder(markdown: string, heading: string): string | null {
  const lines = markdown.split("\n");
  const at = lines.findIndex((line) => line.trim() === heading);
  if (at === -1) return null;
  const fence = fencesOf(lines).find((f) => f.open > at);
  return fence === undefined ? null : fence.text;
}
