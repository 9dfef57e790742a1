// A tiny stand-in for the admin API, for the CLI commands whose endpoints are
// not on this branch yet: a real node:http server on 127.0.0.1 that records
// every request and answers with what the test's route function returns
// (the shapes docs/design.md documents).
import { createServer, type IncomingHttpHeaders } from "node:http";

export const ADMIN_PREFIX = "/_tollgate/admin/v1";

export interface Received {
  method: string;
  /** Below the admin prefix, as sent (still percent-encoded). */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or undefined when there was none. */
  body: unknown;
}

export interface FakeAnswer {
  status?: number;
  body: unknown;
  contentType?: string;
}

export interface FakeAdmin {
  /** The gateway URL to give the CLI (`--url` / TOLLGATE_URL). */
  url: string;
  received: Received[];
  close(): Promise<void>;
}

export async function startFakeAdmin(route: (request: Received) => FakeAnswer): Promise<FakeAdmin> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake.invalid");
      const raw = (req.url ?? "/").split("?")[0] ?? "/";
      const request: Received = {
        method: req.method ?? "GET",
        path: raw.startsWith(ADMIN_PREFIX) ? raw.slice(ADMIN_PREFIX.length) : raw,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body: text === "" ? undefined : (JSON.parse(text) as unknown),
      };
      received.push(request);
      const answer = route(request);
      const status = answer.status ?? 200;
      const contentType = answer.contentType ?? (status >= 400 ? "application/problem+json" : "application/json");
      res.writeHead(status, { "content-type": contentType });
      res.end(typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A problem+json answer as the gateway writes it. */
export function problemAnswer(status: number, code: string, detail: string): FakeAnswer {
  return { status, body: { type: `https://tollgate.dev/problems/${code}`, title: "Refused", status, detail, code, hint: "…" } };
}
