// Origin bodies for the tap's tests: chunks served one per pull, with hooks
// to count reads, see a cancel, fail, or stall until cancelled.

const encoder = new TextEncoder();

export function bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

/** `whole` cut at the given offsets (sorted, deduplicated, inside the text). */
export function splitAt(whole: Uint8Array, offsets: readonly number[]): Uint8Array[] {
  const cuts = [...new Set(offsets.filter((o) => o > 0 && o < whole.length))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let from = 0;
  for (const cut of cuts) {
    pieces.push(whole.slice(from, cut));
    from = cut;
  }
  pieces.push(whole.slice(from));
  return pieces;
}

export interface FakeOrigin {
  readonly stream: ReadableStream<Uint8Array>;
  /** Chunks handed out so far. */
  readonly served: () => number;
  /** The reason the stream was cancelled with, or undefined. */
  readonly cancelled: () => boolean;
}

/**
 * A body serving `chunks` one per pull. `failAfter`: error instead of
 * serving chunk n. `stallAfter`: after n chunks, never answer again until
 * cancelled (an origin that keeps the connection open).
 */
export function fakeOrigin(chunks: readonly Uint8Array[], options: { failAfter?: number; stallAfter?: number; byteStream?: boolean } = {}): FakeOrigin {
  let served = 0;
  let cancelled = false;
  let release: (() => void) | null = null;
  const pull = async (controller: { enqueue(chunk: Uint8Array): void; close(): void; error(reason: unknown): void }) => {
    if (options.failAfter !== undefined && served === options.failAfter) {
      controller.error(new Error("origin reset"));
      return;
    }
    if (options.stallAfter !== undefined && served === options.stallAfter) {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return;
    }
    if (served === chunks.length) {
      controller.close();
      return;
    }
    // A byte stream takes the chunk's buffer over: hand it a copy, keep ours.
    controller.enqueue(options.byteStream === true ? chunks[served++]!.slice() : chunks[served++]!);
  };
  const cancel = () => {
    cancelled = true;
    release?.();
  };
  const stream: ReadableStream<Uint8Array> =
    options.byteStream === true
      ? new ReadableStream({ type: "bytes", pull, cancel }, { highWaterMark: 0 })
      : new ReadableStream<Uint8Array>({ pull, cancel }, { highWaterMark: 0 });
  return { stream, served: () => served, cancelled: () => cancelled };
}

/** Reads a stream to its end, keeping the chunk objects. */
export async function readChunks(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

export function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** An OpenAI-shaped chat completion stream: `events` content chunks, a usage event unless `usage` is null, then [DONE]. */
export function openAiStream(events: number, usage: number | null, options: { lineEnd?: string; content?: (i: number) => string } = {}): string {
  const end = options.lineEnd ?? "\n";
  const content = options.content ?? ((i: number) => `token ${i} `);
  let text = "";
  for (let i = 0; i < events; i++) {
    const delta = JSON.stringify({ content: content(i) });
    text += `data: {"id":"chatcmpl-${i}","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":${delta},"finish_reason":null}],"usage":null}${end}${end}`;
  }
  if (usage !== null) {
    text += `data: {"id":"chatcmpl-${events}","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":${events},"total_tokens":${usage}}}${end}${end}`;
  }
  return `${text}data: [DONE]${end}${end}`;
}
