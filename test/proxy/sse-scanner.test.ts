import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileJsonPath } from "../../src/proxy/json-path";
import type { CostResult } from "../../src/proxy/response-cost-result";
import { MAX_SSE_EVENT_BYTES, MAX_SSE_EVENT_CHARS, SseCostScanner } from "../../src/proxy/sse-scanner";
import { referenceSseCost, referenceSseEvents } from "./cost-reference";
import { bytes, openAiStream, splitAt } from "./streams";

const PATH = "usage.total_tokens";

function scanPieces(pieces: readonly Uint8Array[], path = PATH): SseCostScanner {
  const scanner = new SseCostScanner(compileJsonPath(path));
  for (const piece of pieces) scanner.push(piece);
  return scanner;
}

function scanText(text: string, path = PATH): CostResult {
  return scanPieces([bytes(text)], path).end();
}

const found = (cost: number): CostResult => ({ found: true, cost });
const missing = (reason: "absent" | "malformed" | "too_large" | "aborted"): CostResult => ({ found: false, reason });

describe("SseCostScanner", () => {
  it("reads the usage of an OpenAI stream (usage: null in every chunk, the usage event, then [DONE])", () => {
    expect(scanText(openAiStream(40, 1234))).toEqual(found(1234));
  });

  it("finds no cost in a stream without a usage event", () => {
    expect(scanText(openAiStream(40, null))).toEqual(missing("absent"));
  });

  it("takes the last event carrying a usable cost", () => {
    const text = 'data: {"usage":{"total_tokens":5}}\n\ndata: {"usage":{"total_tokens":9}}\n\ndata: {"usage":null}\n\ndata: {"usage":{"total_tokens":"x"}}\n\ndata: [DONE]\n\n';
    expect(scanText(text)).toEqual(found(9));
  });

  it("reads Anthropic's message_delta usage (named events, cumulative counts)", () => {
    const text = [
      "event: message_start",
      'data: {"type":"message_start","message":{"usage":{"input_tokens":25,"output_tokens":1}}}',
      "",
      "event: ping",
      'data: {"type": "ping"}',
      "",
      "event: content_block_delta",
      'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}',
      "",
      "event: message_delta",
      'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}',
      "",
      "event: message_stop",
      'data: {"type":"message_stop"}',
      "",
      "",
    ].join("\n");
    expect(scanText(text, "usage.output_tokens")).toEqual(found(15));
  });

  it.each([
    ["CRLF", "\r\n"],
    ["CR", "\r"],
    ["LF", "\n"],
  ])("splits lines on %s", (_name, end) => {
    expect(scanText(openAiStream(3, 77, { lineEnd: end }))).toEqual(found(77));
  });

  it("joins data lines with LF, drops one leading space, skips comments and other fields", () => {
    const text = [
      ": keep-alive",
      "id: 7",
      "retry: 1000",
      "event: usage",
      'data:{"usage":',
      "data:   {",
      'data: "total_tokens"',
      "data",
      "data: : 31}}",
      "",
      "",
    ].join("\r\n");
    expect(referenceSseEvents(text)).toEqual(['{"usage":\n  {\n"total_tokens"\n\n: 31}}']);
    expect(scanText(text)).toEqual(found(31));
  });

  it("reads LF inside a data line's JSON string as the standard joins it: not JSON", () => {
    expect(scanText('data: {"usage":{"total_tokens":3,"s":"a\ndata: b"}}\n\n')).toEqual(missing("absent"));
  });

  it("drops a leading byte order mark, and only there", () => {
    expect(scanText('\ufeffdata: {"usage":{"total_tokens":4}}\n\n')).toEqual(found(4));
    expect(scanText('\ufeff\ufeffdata: {"usage":{"total_tokens":4}}\n\n')).toEqual(missing("absent"));
    expect(scanText('\n\ufeffdata: {"usage":{"total_tokens":4}}\n\n')).toEqual(missing("absent"));
  });

  it("does not dispatch an event the stream ends in (no blank line after it)", () => {
    expect(scanText('data: {"usage":{"total_tokens":4}}\n')).toEqual(missing("absent"));
    expect(scanText('data: {"usage":{"total_tokens":4}}\n\ndata: {"usage":{"total_tokens":8}}')).toEqual(found(4));
  });

  it("reads a key written with \\u escapes", () => {
    expect(scanText('data: {"\\u0075sage":{"total\\u005ftokens":6}}\n\n')).toEqual(found(6));
    expect(scanText('data: {"usage":{"\\u0074otal_tokens":6}}\n\n')).toEqual(found(6));
  });

  it("finds the cost on a path that runs through arrays only", () => {
    expect(scanText("data: [[1,2],[3,11]]\n\ndata: [DONE]\n\n", "1.1")).toEqual(found(11));
  });

  it("says malformed when events carry the path with unusable values only", () => {
    expect(scanText('data: {"usage":{"total_tokens":-4}}\n\ndata: {"usage":{"total_tokens":"4"}}\n\n')).toEqual(missing("malformed"));
    expect(scanText('data: {"usage":{"total_tokens":4}\n\n')).toEqual(missing("absent"));
  });

  it(`skips an event over ${MAX_SSE_EVENT_BYTES} bytes of data and keeps reading`, () => {
    const filler = (n: number) => `data: {"pad":"${"x".repeat(n)}","usage":{"total_tokens":5}}\n\n`;
    const overhead = '{"pad":"","usage":{"total_tokens":5}}'.length + 1; // the LF after the line counts
    expect(scanText(filler(MAX_SSE_EVENT_BYTES - overhead))).toEqual(found(5));
    expect(scanText(filler(MAX_SSE_EVENT_BYTES - overhead + 1))).toEqual(missing("too_large"));
    expect(scanText(filler(MAX_SSE_EVENT_BYTES) + 'data: {"usage":{"total_tokens":6}}\n\n')).toEqual(found(6));
    expect(scanText('data: {"usage":{"total_tokens":6}}\n\n' + filler(MAX_SSE_EVENT_BYTES))).toEqual(found(6));
    // The bound counts data across lines too.
    const lines = `${"data: 1\n".repeat(MAX_SSE_EVENT_BYTES / 2 + 1)}\n`;
    expect(scanText(lines, "0")).toEqual(missing("too_large"));
  });

  it(`skips an event whose text passes ${MAX_SSE_EVENT_CHARS} characters while it arrives, and reads on`, () => {
    const comments = ": padding padding padding padding\n".repeat(Math.ceil(MAX_SSE_EVENT_CHARS / 34) + 1);
    const big = bytes(`${comments}data: {"usage":{"total_tokens":5}}\n\n`);
    const after = bytes('data: {"usage":{"total_tokens":6}}\n\n');
    // Held across chunks, the event passes the bound and is dropped up to its blank line.
    expect(scanPieces([...splitAt(big, Array.from({ length: 200 }, (_, i) => i * 2000)), after]).end()).toEqual(found(6));
    expect(scanPieces(splitAt(big, Array.from({ length: 200 }, (_, i) => i * 2000))).end()).toEqual(missing("too_large"));
    // The blank line ending it may straddle two chunks.
    const cut = big.length - 1;
    expect(scanPieces([...splitAt(big, [1000, 100_000, 200_000, 270_000, cut]), after]).end()).toEqual(found(6));
  });

  it("reads an event that arrives a byte at a time in linear time", () => {
    const event = bytes(`data: {"pad":"${"x".repeat(60_000)}","usage":{"total_tokens":12}}\n\n`);
    const scanner = new SseCostScanner(compileJsonPath(PATH));
    for (let i = 0; i < event.length; i++) scanner.push(event.subarray(i, i + 1));
    expect(scanner.end()).toEqual(found(12));
  });

  it("reads a long stream, and one of many small events", () => {
    const long = openAiStream(20_000, 987_654);
    expect(long.length).toBeGreaterThan(3_000_000);
    expect(scanText(long)).toEqual(found(987_654));
    expect(scanText(`${"data: x\n\n".repeat(100_000)}data: {"usage":{"total_tokens":3}}\n\n`)).toEqual(found(3));
  });

  it("gives the same outcome for the stream cut before and after every byte", () => {
    const text = `\ufeff: hi\r\nevent: x\r\ndata: {"usage":{"total_tokens":1},"s":"é😀\\"\\\\u"}\r\n\r\n${openAiStream(2, 4321, { lineEnd: "\r\n" })}`;
    const whole = bytes(text);
    expect(scanPieces([whole]).end()).toEqual(found(4321));
    for (let cut = 1; cut < whole.length; cut++) expect(scanPieces(splitAt(whole, [cut])).end()).toEqual(found(4321));
    expect(scanPieces(splitAt(whole, [...whole.keys()])).end()).toEqual(found(4321));
  });

  it("after a cut, answers the last cost seen, else aborted", () => {
    const text = 'data: {"usage":{"total_tokens":5}}\n\ndata: {"usage":{"total_tokens":9}}\n';
    expect(scanText(text)).toEqual(found(5));
    expect(scanPieces([bytes(text)]).cut()).toEqual(found(5));
    expect(scanPieces([bytes('data: {"usage":{"total_tokens":5}}\n')]).cut()).toEqual(missing("aborted"));
  });
});

// ---------------------------------------------------------------- properties

const usage = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 1_000_000 }) },
  { weight: 1, arbitrary: fc.constantFrom(-3, 2.5, "7", null, true) },
);
/** One event's JSON: a content chunk, a usage event, or other shapes. */
const eventJson = fc.oneof(
  fc.record({ id: fc.string({ maxLength: 8 }), choices: fc.array(fc.record({ delta: fc.record({ content: fc.string({ maxLength: 20 }) }) }), { maxLength: 2 }), usage: fc.constant(null) }),
  fc.record({ usage: fc.record({ prompt_tokens: usage, total_tokens: usage }, { requiredKeys: [] }) }),
  fc.jsonValue({ maxDepth: 2 }),
);
const eventArb = fc.record({
  json: eventJson,
  form: fc.constantFrom("compact", "pretty", "escaped-key", "not-json", "comment", "named", "no-space"),
});
const streamArb = fc.record({
  bom: fc.boolean(),
  events: fc.array(eventArb, { maxLength: 8 }),
  lineEnd: fc.constantFrom("\n", "\r\n", "\r"),
  tail: fc.constantFrom("", "data: [DONE]", 'data: {"usage":{"total_tokens":1}}', "data: x\n"),
});

type GeneratedStream = typeof streamArb extends fc.Arbitrary<infer T> ? T : never;

function streamText(stream: GeneratedStream): string {
  const end = stream.lineEnd;
  let text = stream.bom ? "\ufeff" : "";
  for (const { json, form } of stream.events) {
    const compact = JSON.stringify(json);
    if (form === "compact") text += `data: ${compact}${end}${end}`;
    else if (form === "no-space") text += `data:${compact}${end}${end}`;
    else if (form === "named") text += `event: delta${end}id: 3${end}data: ${compact}${end}${end}`;
    else if (form === "comment") text += `: ${compact}${end}${end}`;
    else if (form === "not-json") text += `data: [DONE]${end}${end}`;
    else if (form === "escaped-key") text += `data: ${compact.replaceAll('"total_tokens"', '"tot\\u0061l_tokens"')}${end}${end}`;
    else text += `${JSON.stringify(json, null, 1).split("\n").map((line) => `data: ${line}`).join(end)}${end}${end}`;
  }
  return text + stream.tail;
}

describe("SseCostScanner properties", () => {
  it("agrees with the reference event-stream parser and JSON.parse", () => {
    fc.assert(
      fc.property(streamArb, (stream) => {
        const text = streamText(stream);
        expect(scanText(text)).toEqual(referenceSseCost(text, PATH, MAX_SSE_EVENT_BYTES));
      }),
      { numRuns: 2000 },
    );
  });

  it("gives the same outcome however the bytes are split", () => {
    fc.assert(
      fc.property(streamArb, fc.array(fc.nat(), { maxLength: 16 }), (stream, cuts) => {
        const whole = bytes(streamText(stream));
        const offsets = cuts.map((c) => c % (whole.length + 1));
        expect(scanPieces(splitAt(whole, offsets)).end()).toEqual(scanPieces([whole]).end());
      }),
      { numRuns: 2000 },
    );
  });
});
