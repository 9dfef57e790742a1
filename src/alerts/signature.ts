// The webhook signature: `Tollgate-Signature: t=<unix s>,v1=<hex HMAC-SHA256(ALERT_SECRET, t + "." + body)>`,
// the scheme Stripe's webhooks made familiar. The receiver recomputes it over
// the raw body and the `t` it was given, compares in constant time, and
// refuses a `t` too far from its clock (replays).
import { hmacBytes, importHmacKey, toHex } from "../utils/crypto";

export async function signatureHeader(secret: string, body: string, unixS: number): Promise<string> {
  const key = await importHmacKey(secret);
  return `t=${unixS},v1=${toHex(await hmacBytes(key, `${unixS}.${body}`))}`;
}
