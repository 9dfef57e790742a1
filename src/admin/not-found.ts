// The admin API's 404s: the identifier is the operator's own, so it is named.
import { problem } from "../errors";

export function tenantNotFound(slug: string): Response {
  return problem("not_found", { detail: `No tenant named ${slug}.` });
}

export function keyNotFound(id: string): Response {
  return problem("not_found", { detail: `No key with id ${id}.` });
}

export function overrideNotFound(callerKey: string): Response {
  return problem("not_found", { detail: `No override for ${callerKey}.` });
}

export function orgNotFound(slug: string): Response {
  return problem("not_found", { detail: `No org named ${slug}.` });
}

export function blockNotFound(id: number): Response {
  return problem("not_found", { detail: `No block with id ${id}.` });
}
