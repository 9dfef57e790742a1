// One way for every check to refuse: in `mode: "enforce"` the refusal is the
// answer; in `mode: "shadow"` it is recorded (the response carries
// `Tollgate-Shadow: <code>`, the request log says `shadow:<code>`) and the
// request goes on.
import type { Context } from "hono";
import type { GatewayEnv } from "../context";
import type { ProblemCode } from "../errors";

/** Returns the response to answer with, or null when shadow mode lets the request through. */
export function refuse(c: Context<GatewayEnv>, code: ProblemCode, response: Response): Response | null {
  if (c.get("config").mode === "shadow") {
    c.get("shadow").push(code);
    return null;
  }
  c.set("decision", code);
  return response;
}
