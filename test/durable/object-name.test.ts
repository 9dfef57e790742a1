// objectNameError / parseObjectName (issue 10 item 12): a name the
// store cannot hold is a client error, with a reason that never echoes it.
import { describe, expect, it } from "vitest";
import { MAX_OBJECT_NAME_BYTES, objectNameError, parseObjectName, storableObjectName } from "../../src/durable/object-name";

describe("object names", () => {
  it("decodes the raw parameter to the one spelling stored", () => {
    expect(parseObjectName("a%20b")).toEqual({ kind: "ok", name: "a b" });
    expect(parseObjectName("%61")).toEqual({ kind: "ok", name: "a" });
    expect(parseObjectName("caf%c3%a9")).toEqual(parseObjectName("caf%C3%A9"));
    expect(parseObjectName("100%25")).toEqual({ kind: "ok", name: "100%" });
    expect(parseObjectName("plain.bin")).toEqual({ kind: "ok", name: "plain.bin" });
    expect(objectNameError("x")).toBeNull();
  });

  it("accepts exactly 1024 bytes after decoding, and refuses 1025", () => {
    expect(objectNameError("a".repeat(MAX_OBJECT_NAME_BYTES))).toBeNull();
    expect(objectNameError("a".repeat(MAX_OBJECT_NAME_BYTES + 1))).toBe("the object name is longer than 1024 bytes");
    // 511 × "é" (2 bytes each) + "aa" = 1024 bytes; one more "a" passes the limit.
    const e = "%C3%A9".repeat(511);
    expect(objectNameError(`${e}aa`)).toBeNull();
    expect(objectNameError(`${e}aaa`)).toBe("the object name is longer than 1024 bytes");
    // 256 four-byte code points = 1024 bytes.
    expect(objectNameError("%F0%9F%98%80".repeat(256))).toBeNull();
    expect(objectNameError(`${"%F0%9F%98%80".repeat(256)}a`)).not.toBeNull();
    // Raw length alone decides a very long one: 3 × 1024 + 1 raw characters cannot fit.
    expect(objectNameError("%41".repeat(1024))).toBeNull();
    expect(objectNameError("a".repeat(100_000))).toBe("the object name is longer than 1024 bytes");
  });

  it("refuses names that are not valid UTF-8 after decoding, without echoing them", () => {
    for (const raw of ["%", "%zz", "a%2", "%C3", "%C0%80", "%ED%A0%80", "%FF", "%E2%82"]) {
      const reason = objectNameError(raw);
      expect(reason, raw).toBe("the object name is not valid percent-encoded UTF-8");
    }
    expect(objectNameError("\uD800x")).toBe("the object name is not valid UTF-8");
    expect(objectNameError("")).toBe("the object name is empty");
    expect(objectNameError("secret-token%zz")).not.toContain("secret");
  });

  it("agrees with the check the quota objects make on decoded names", () => {
    expect(storableObjectName("a b")).toBe(true);
    expect(storableObjectName("")).toBe(false);
    expect(storableObjectName("\uDC00")).toBe(false);
    expect(storableObjectName("é".repeat(512))).toBe(true);
    expect(storableObjectName("é".repeat(513))).toBe(false);
  });
});
