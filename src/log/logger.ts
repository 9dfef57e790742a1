// The one logger (STYLE 17): every line is one JSON object with `level`,
// `at_unix_ms` and `event`, written with console.log / warn / error so
// Workers Logs picks it up. Callers pass figures only: never a header, body,
// credential, address, claim value or SQL text. An error is logged by its
// class name alone (`errorName`), since a D1 or fetch error's message can
// carry SQL or input.

export type LogLevel = "info" | "warn" | "error";
export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined | Readonly<Record<string, unknown>>>>;

function write(level: LogLevel, event: string, fields: LogFields | undefined, atMs: number): void {
  let line = `{"level":"${level}","at_unix_ms":${atMs},"event":${JSON.stringify(event)}`;
  if (fields !== undefined) {
    for (const name in fields) {
      const value = fields[name];
      if (value !== undefined) line += `,${JSON.stringify(name)}:${JSON.stringify(value)}`;
    }
  }
  line += "}";
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.log(line);
}

export const log = {
  info(event: string, fields?: LogFields, atMs: number = Date.now()): void {
    write("info", event, fields, atMs);
  },
  warn(event: string, fields?: LogFields, atMs: number = Date.now()): void {
    write("warn", event, fields, atMs);
  },
  error(event: string, fields?: LogFields, atMs: number = Date.now()): void {
    write("error", event, fields, atMs);
  },
  /** A line built elsewhere (the request log), already JSON with level and at_unix_ms. */
  raw(line: string): void {
    console.log(line);
  },
};

/** What may be logged of an error: its class name, never its message. */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
