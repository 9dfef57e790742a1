import { describe, expect, it } from "vitest";
import { answerFrom, originRequestHeaders } from "../../src/proxy/forward";

// The recording origin only ever answers `Connection: keep-alive`; these pin
// the rest of docs/design.md step 9 on the way back: every name the origin's
// Connection header lists is dropped too, and nothing end to end is.
describe("answerFrom", () => {
  it("drops the origin's hop-by-hop headers and the names its Connection lists, keeping the rest", async () => {
    const origin = new Response("body", {
      status: 207,
      statusText: "Multi",
      headers: {
        connection: "X-Private-Hop, close",
        "x-private-hop": "secret",
        "keep-alive": "timeout=5",
        "proxy-authenticate": "Basic",
        "x-kept": "yes",
        "content-type": "text/plain",
      },
    });
    const answer = answerFrom(origin, []);
    expect(answer.status).toBe(207);
    expect(answer.statusText).toBe("Multi");
    for (const name of ["connection", "x-private-hop", "keep-alive", "proxy-authenticate"]) expect(answer.headers.get(name), name).toBeNull();
    expect(answer.headers.get("x-kept")).toBe("yes");
    expect(answer.headers.get("content-type")).toBe("text/plain");
    expect(await answer.text()).toBe("body");
  });

  it("sets the gateway's own headers over the origin's of the same name", () => {
    const origin = new Response(null, { headers: { ratelimit: "from-origin", "x-other": "1" } });
    const answer = answerFrom(origin, [["ratelimit", "from-gateway"]]);
    expect(answer.headers.get("ratelimit")).toBe("from-gateway");
    expect(answer.headers.get("x-other")).toBe("1");
  });
});

describe("originRequestHeaders", () => {
  const who = { clientAddress: "203.0.113.5", tenant: "acme", keyId: "k1", caller: null, stripCredential: true, forwardMethodOverride: false };

  it("drops hop-by-hop, gateway-owned and listed names and the credential, and ignores a listed name that is no header name", () => {
    const incoming = new Headers({
      connection: "X-Private-Hop, bad name(, keep-alive",
      "x-private-hop": "secret",
      "keep-alive": "timeout=5",
      te: "trailers",
      "x-forwarded-for": "1.1.1.1",
      "x-tollgate-tenant": "someone-else",
      authorization: "Bearer tg_x_y",
      "x-api-key": "tg_x_y",
      "x-kept": "yes",
      accept: "*/*",
    });
    const out = originRequestHeaders(incoming, who);
    expect([...out.keys()].sort()).toEqual(["accept", "x-forwarded-for", "x-kept", "x-real-ip", "x-tollgate-key-id", "x-tollgate-tenant"]);
    expect(out.get("x-forwarded-for")).toBe("203.0.113.5");
    expect(out.get("x-tollgate-tenant")).toBe("acme");
    // The client's headers are untouched.
    expect(incoming.get("x-private-hop")).toBe("secret");
  });

  it("keeps the credential without strip_credential", () => {
    const out = originRequestHeaders(new Headers({ authorization: "Bearer t", "x-api-key": "k" }), { ...who, stripCredential: false });
    expect(out.get("authorization")).toBe("Bearer t");
    expect(out.get("x-api-key")).toBe("k");
  });
});
