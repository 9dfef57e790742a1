// Helpers for the stream tests: a client end that records what
// it receives, upgrade requests, and the recording origin's view of a stream.
import { expect } from "vitest";
import { eventually, gatewayRequest, type OriginSeen, originLog } from "../helpers";

export interface Closed {
  code: number;
  reason: string;
  wasClean: boolean;
}

/** The client's end of a stream: accepted, recording every message and the close. */
export class TestClient {
  readonly socket: WebSocket;
  readonly messages: (string | ArrayBuffer)[] = [];
  closed: Closed | null = null;

  constructor(socket: WebSocket) {
    this.socket = socket;
    socket.binaryType = "arraybuffer";
    socket.accept();
    socket.addEventListener("message", (event) => {
      this.messages.push(event.data);
    });
    socket.addEventListener("close", (event) => {
      this.closed ??= { code: event.code, reason: event.reason, wasClean: event.wasClean };
    });
    socket.addEventListener("error", () => {
      this.closed ??= { code: 1006, reason: "error event", wasClean: false };
    });
  }

  send(data: string | ArrayBuffer | Uint8Array): void {
    this.socket.send(data);
  }

  /** Waits until `n` messages arrived; returns them. */
  async received(n: number, message = `${n} messages arrive`): Promise<(string | ArrayBuffer)[]> {
    await eventually(() => this.messages.length >= n, message);
    return this.messages.slice(0, n);
  }

  /** Waits for the gateway's close. */
  async closing(timeoutMs = 10_000): Promise<Closed> {
    await eventually(() => this.closed !== null, "the stream is closed", timeoutMs);
    return this.closed!;
  }
}

/** The 101 answer's client end, asserted. */
export function clientOf(response: Response): TestClient {
  expect(response.status).toBe(101);
  expect(response.webSocket).not.toBeNull();
  return new TestClient(response.webSocket!);
}

/** An `Upgrade: websocket` request to the gateway from `ip`, tagged for the origin's record. */
export function upgradeRequest(path: string, options: { ip: string; tag: string; headers?: Record<string, string> }): Request {
  return gatewayRequest(path, { ip: options.ip, headers: { upgrade: "websocket", connection: "Upgrade", "x-test-tag": options.tag, ...options.headers } });
}

export interface OriginStream extends OriginSeen {
  kind?: "websocket";
  messages: ({ text: string } | { binary_bytes: number })[];
  messages_received: number;
  ws_close: { code: number; reason: string; by: "peer" | "origin" } | null;
}

/** The origin's record of the stream tagged `tag` (waits for it). */
export async function originStream(tag: string): Promise<OriginStream> {
  await eventually(async () => (await originLog(tag)).length === 1, "the origin recorded the stream");
  return (await originLog(tag))[0] as OriginStream;
}

/** Waits until the origin saw the stream tagged `tag` close; returns how. */
export async function originClose(tag: string): Promise<NonNullable<OriginStream["ws_close"]>> {
  await eventually(async () => (await originLog(tag))[0]?.["ws_close" as never] != null, "the origin saw the stream close");
  return (await originStream(tag)).ws_close!;
}

export function bytesOf(data: string | ArrayBuffer): number[] {
  expect(typeof data).not.toBe("string");
  return [...new Uint8Array(data as ArrayBuffer)];
}
