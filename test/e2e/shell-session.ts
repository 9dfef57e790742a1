// One bash, kept open across a document's examples as a reader's terminal is:
// a variable one block sets is there for the next. Each block runs from a
// file of its own, sourced with stdin from /dev/null (so a command that reads
// stdin cannot eat the next block), its stdout and stderr together as a
// terminal shows them.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface BlockRun {
  readonly output: string;
  readonly exitCode: number;
}

export class ShellSession {
  readonly #bash: ChildProcessWithoutNullStreams;
  readonly #sentinel = `@@doc-block-done-${randomBytes(8).toString("hex")}`;
  readonly #scratch = mkdtempSync(join(tmpdir(), "tollgate-doc-blocks-"));
  #buffer = "";
  #count = 0;
  #waiting: ((text: string) => void) | null = null;

  /** `init` runs first, silently (shell functions the blocks may call). */
  constructor(cwd: string, env: Record<string, string>, init = "") {
    this.#bash = spawn("bash", ["--noprofile", "--norc"], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    const take = (chunk: Buffer) => {
      this.#buffer += chunk.toString("utf8");
      this.#deliver();
    };
    this.#bash.stdout.on("data", take);
    this.#bash.stderr.on("data", take);
    this.#bash.stdin.write(`${init}\nexec 2>&1\n`);
  }

  #deliver(): void {
    if (this.#waiting === null) return;
    const end = this.#buffer.indexOf(`${this.#sentinel} `);
    if (end === -1) return;
    const lineEnd = this.#buffer.indexOf("\n", end);
    if (lineEnd === -1) return;
    const text = this.#buffer.slice(0, lineEnd);
    this.#buffer = this.#buffer.slice(lineEnd + 1);
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting(text);
  }

  /** Runs `code` in the session; resolves with what it printed and its last command's status. */
  run(code: string, timeoutMs: number): Promise<BlockRun> {
    const file = join(this.#scratch, `block-${++this.#count}.sh`);
    writeFileSync(file, `${code}\n`);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting = null;
        reject(new Error(`the block did not finish within ${timeoutMs} ms; it printed:\n${this.#buffer}`));
      }, timeoutMs);
      this.#waiting = (text) => {
        clearTimeout(timer);
        const at = text.lastIndexOf(this.#sentinel);
        const status = Number(text.slice(at + this.#sentinel.length + 1));
        // printf put a newline before the sentinel, so output without one still ends its line.
        resolve({ output: text.slice(0, at).replace(/\n$/, ""), exitCode: status });
      };
      this.#bash.stdin.write(`. '${file}' < /dev/null; printf '\\n%s %d\\n' '${this.#sentinel}' "$?"\n`);
      this.#deliver();
    });
  }

  close(): void {
    this.#bash.stdin.end();
    this.#bash.kill("SIGKILL");
    rmSync(this.#scratch, { recursive: true, force: true });
  }
}
