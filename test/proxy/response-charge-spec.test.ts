import { describe, expect, it } from "vitest";
import { MAX_COST } from "../../src/engine/limit";
import { compileJsonPath, jsonPathError } from "../../src/proxy/json-path";
import { parseResponseCharge, responseChargeSchema } from "../../src/proxy/response-cost-spec";

describe("response_charge", () => {
  it("accepts a header source and lower-cases the name", () => {
    const parsed = parseResponseCharge({ category: "tokens", header: "X-Usage-Total-Tokens", reserve: 500 });
    expect(parsed).toEqual({ ok: true, charge: { category: "tokens", reserve: 500, source: { kind: "header", name: "x-usage-total-tokens" } } });
  });

  it("accepts a JSON path and reserves 1 by default", () => {
    const parsed = parseResponseCharge({ category: "tokens", json: "usage.total_tokens" });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.charge.reserve).toBe(1);
    expect(parsed.charge.source.kind).toBe("json");
    if (parsed.charge.source.kind === "json") expect(parsed.charge.source.path.text).toBe("usage.total_tokens");
  });

  it("accepts a reserve of 0 and of MAX_COST", () => {
    expect(parseResponseCharge({ category: "bytes_out", header: "x-bytes", reserve: 0 }).ok).toBe(true);
    expect(parseResponseCharge({ category: "bytes_out", header: "x-bytes", reserve: MAX_COST }).ok).toBe(true);
  });

  it.each([
    [{ category: "tokens" }, "", "exactly one of header"],
    [{ category: "tokens", header: "x-a", json: "usage.total_tokens" }, "", "exactly one of header"],
    [{ category: "Tokens", header: "x-a" }, "category", "^[a-z]"],
    [{ category: "t".repeat(33), header: "x-a" }, "category", "^[a-z]"],
    [{ header: "x-a" }, "category", "must be a string"],
    [{ category: "tokens", header: "x a" }, "header", "header name"],
    [{ category: "tokens", header: "" }, "header", "header name"],
    [{ category: "tokens", json: "usage..total" }, "json", "segments"],
    [{ category: "tokens", json: "usage.total tokens" }, "json", "segments"],
    [{ category: "tokens", json: "a.b.c.d.e.f.g.h.i" }, "json", "at most 8"],
    [{ category: "tokens", json: 5 }, "json", "must be a string"],
    [{ category: "tokens", header: "x-a", reserve: -1 }, "reserve", ">= 0"],
    [{ category: "tokens", header: "x-a", reserve: 1.5 }, "reserve", "whole number"],
    [{ category: "tokens", header: "x-a", reserve: MAX_COST + 1 }, "reserve", `<= ${MAX_COST}`],
    [{ category: "tokens", header: "x-a", reserve: "5" }, "reserve", "must be a number"],
    [{ category: "tokens", header: "x-a", price: 3 }, "", "price"],
  ])("refuses %j, naming %s", (raw, field, message) => {
    const parsed = parseResponseCharge(raw);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.field).toBe(field);
    expect(parsed.message).toContain(message);
  });

  it("is a strict zod object the route schema can embed", () => {
    expect(responseChargeSchema.safeParse({ category: "tokens", json: "usage.total_tokens", extra: true }).success).toBe(false);
    expect(responseChargeSchema.parse({ category: "tokens", json: "usage.total_tokens" })).toEqual({ category: "tokens", json: "usage.total_tokens", reserve: 1 });
  });
});

describe("JSON path syntax", () => {
  it.each(["usage.total_tokens", "usageMetadata.totalTokenCount", "choices.0.usage.total_tokens", "a-b_c.D9", "0", "a.b.c.d.e.f.g.h", "x".repeat(64)])(
    "accepts %s",
    (path) => {
      expect(jsonPathError(path)).toBeNull();
    },
  );

  it.each(["", ".a", "a.", "a..b", "a b", "a.b[0]", "a.*", "usage.total$", "é", "x".repeat(65), "a.b.c.d.e.f.g.h.i"])("refuses %j", (path) => {
    expect(jsonPathError(path)).not.toBeNull();
  });

  it("treats canonical whole numbers as indexes too, and keys the filter on the last named segment", () => {
    const path = compileJsonPath("choices.0.usage.10.01");
    expect([...path.indexes]).toEqual([-1, 0, -1, 10, -1]);
    expect(path.keyLiteral).toBe('"01"');
    expect(compileJsonPath("0.1").keyLiteral).toBeNull();
  });
});
