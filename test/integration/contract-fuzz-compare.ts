// What the model says against what the gateway did: every difference named
// with where in the scenario it happened, and a failing case printed as a
// test to paste into contract-fuzz.test.ts.
import type { Expected, ExpectedAnswer } from "../model/gateway";
import type { Scenario } from "../model/scenario";
import type { Observed, ObservedAnswer } from "./contract-fuzz-gateway";

const BUDGET_CODES = new Set(["budget_exhausted", "credits_exhausted"]);

const POLICY_ITEM = /"([^"]+)";q=(\d+)(?:;w=(\d+))?(?:;tollgate-burst=(\d+))?/g;
const RATE_ITEM = /"([^"]+)";r=(\d+);t=(\d+)/g;

function answerDifferences(e: ExpectedAnswer, o: ObservedAnswer): string[] {
  const out: string[] = [];
  const where = e.at;
  const shapeOk = e.shapes.some(
    (s) =>
      s.status === o.status &&
      (s.code === null ? o.code === null : s.code === o.code) &&
      (s.code === null || String(s.retryAfterS ?? null) === String(o.retryAfter === null ? null : Number(o.retryAfter))) &&
      (s.category === null || o.body?.category === s.category),
  );
  if (!shapeOk) {
    const seen = { status: o.status, code: o.code, retryAfter: o.retryAfter, category: o.body?.category ?? null };
    out.push(`${where}: answered ${JSON.stringify(seen)}, the model says ${e.shapes.map((s) => JSON.stringify(s)).join(" or ")}`);
    return out;
  }
  // Tollgate-Shadow names the refusal enforce would have made first, and may name the later ones too
  // (the gateway names a budget's after a rate limit's, not a quota's: see test/model/README.md).
  const items = o.shadow === null ? [] : o.shadow.split(",").map((s) => s.trim());
  const shadow = items.filter((item) => !item.includes(";policy="));
  // Then what each shadow policy would have refused, in any order: every one the model names, and no other than it allows.
  const marks = items.filter((item) => item.includes(";policy="));
  const allowed = [...e.shadowPolicies, ...e.shadowPoliciesMaybe];
  if (!e.shadowPolicies.every((mark) => marks.includes(mark)) || !marks.every((mark) => allowed.includes(mark))) {
    out.push(`${where}: Tollgate-Shadow policies ${JSON.stringify(marks.join(", ") || null)}, the model says ${JSON.stringify(e.shadowPolicies.join(", ") || null)}${e.shadowPoliciesMaybe.length > 0 ? ` (and maybe ${e.shadowPoliciesMaybe.join(", ")})` : ""}`);
  }
  // Several budgets that would refuse together: the model lists each one's code, and any of them may come first.
  const firstOk = shadow[0] === e.shadow[0] || (BUDGET_CODES.has(shadow[0] ?? "") && BUDGET_CODES.has(e.shadow[0] ?? ""));
  const shadowOk = e.shadow.length === 0 ? shadow.length === 0 : firstOk && shadow.every((code) => e.shadow.includes(code));
  if (!shadowOk) out.push(`${where}: Tollgate-Shadow ${JSON.stringify(o.shadow)}, the model says ${JSON.stringify(e.shadow.join(", ") || null)}`);
  if (e.retryAfterMs !== null && o.body?.retry_after_ms !== e.retryAfterMs) out.push(`${where}: retry_after_ms ${String(o.body?.retry_after_ms)}, the model says ${e.retryAfterMs}`);
  if (e.violated !== null) {
    const seen = [...((o.body?.["violated-policies"] as string[] | undefined) ?? [])].sort().join(",");
    if (seen !== [...e.violated].sort().join(",")) out.push(`${where}: violated-policies ${seen}, the model says ${[...e.violated].sort().join(",")}`);
  }
  // A client that hung up never read the answer's headers: its counters are what matter.
  if (e.hangUp) return out;
  if (e.policies !== null && (o.status < 400 || o.code === "rate_limited")) {
    const seen: Record<string, string> = {};
    for (const m of (o.policy ?? "").matchAll(POLICY_ITEM)) seen[m[1]!.replace(/-\d+$/, "")] = `${m[2]};${m[3] ?? "?"};${m[4] ?? m[2]}`;
    const want = Object.entries(e.policies).sort().map(([k, v]) => `${k}=${v}`).join(" ");
    const got = Object.entries(seen).sort().map(([k, v]) => `${k}=${v}`).join(" ");
    if (want !== got) out.push(`${where}: RateLimit-Policy ${got}, the model says ${want}`);
  }
  if (e.figures !== null && o.status < 400) {
    const items = [...(o.rateLimit ?? "").matchAll(RATE_ITEM)];
    const least = Math.min(...Object.values(e.figures).map((f) => f.r));
    if (items.length === 0 && Object.keys(e.figures).length > 0) out.push(`${where}: no RateLimit header, the model has ${JSON.stringify(e.figures)}`);
    for (const m of items) {
      const want = e.figures[m[1]!];
      const got = { r: Number(m[2]), t: Number(m[3]) };
      if (want === undefined) out.push(`${where}: RateLimit names ${m[1]}, which the model did not charge`);
      else if (want.r !== got.r || want.t !== got.t) out.push(`${where}: RateLimit ${m[1]} r=${got.r} t=${got.t}, the model says r=${want.r} t=${want.t}`);
      else if (e.figuresTightest && got.r !== least) out.push(`${where}: RateLimit names ${m[1]} (r=${got.r}), not the one closest to running out (r=${least})`);
    }
  }
  return out;
}

/** Every way the gateway's run differs from the model's. */
export function differences(expected: Expected, observed: Observed): string[] {
  const out: string[] = [];
  expected.answers.forEach((e, i) => {
    const o = observed.answers[i]!;
    out.push(...answerDifferences(e, o));
  });
  const paths = expected.answers.flatMap((a) => (a.forwardedPath === null ? [] : [a.forwardedPath])).sort();
  if (paths.join("\n") !== observed.originPaths.join("\n")) out.push(`the origin received ${JSON.stringify(observed.originPaths)}, the model says ${JSON.stringify(paths)}`);
  for (const want of expected.limits) {
    const got = observed.limits.find((l) => l.subject === want.subject && l.category === want.category && l.kind === want.kind && l.count === want.limit.count && l.windowMs === want.limit.windowMs && l.burst === want.limit.burst);
    if (got === undefined) out.push(`explain ${want.subject}: no ${want.category}/${want.kind} ${want.limit.count} per ${want.limit.windowMs} ms`);
    else if (got.remaining !== want.remaining || got.resetMs !== want.resetMs) out.push(`explain ${want.subject} ${want.category}/${want.kind}: remaining ${got.remaining}, reset_ms ${got.resetMs}; the model says remaining ${want.remaining}, reset_ms ${want.resetMs}`);
  }
  for (const [tenant, want] of Object.entries(expected.quota)) {
    const got = observed.quota[tenant];
    if (JSON.stringify(got) !== JSON.stringify(want)) out.push(`usage of ${tenant}: ${JSON.stringify(got)}, the model says ${JSON.stringify(want)}`);
  }
  expected.budgets.forEach((want, i) => {
    const got = observed.budgets[i];
    if (got?.used !== want.used) out.push(`budget ${want.owner}/${want.category}: used ${String(got?.used)}, the model says ${want.used}`);
  });
  return out;
}

/** A failing case as a test to paste into contract-fuzz.test.ts. */
export function asTest(scenario: Scenario, diffs: readonly string[]): string {
  return [
    `it("agrees with the model on a case the fuzz found: ${diffs[0]!.replace(/["\\]/g, "'").slice(0, 120)}", async () => {`,
    `  await expectAgreement(${JSON.stringify(scenario)});`,
    "});",
  ].join("\n");
}
