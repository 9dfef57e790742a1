import { describe, expect, it } from "vitest";
import { answerFrom } from "../../src/proxy/forward";

// The recording origin only ever answers `Connection: keep-alive`; these pin
// the rest of DESIGN §3 step 9 on the way back: every name the origin's
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
