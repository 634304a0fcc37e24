/**
 * Output: human text (tables, lines) by default, exactly one JSON document on stdout with --json.
 * Commands call `out.result(value, () => { ...human output... })` exactly once on success.
 */

export interface Writer {
  write(chunk: string): unknown;
}

/** Everything the CLI touches in its environment, injectable for in-process tests. */
export interface CliIO {
  stdout: Writer;
  stderr: Writer;
  /** Environment variables (ORCH_URL, ORCHCTL_HOME, HOME, SSH_AUTH_SOCK, ...). */
  env: Record<string, string | undefined>;
}

export class Output {
  private emitted = false;

  constructor(
    readonly io: CliIO,
    readonly json: boolean,
  ) {}

  /**
   * Emit a command's result. With --json `value` is printed as the one JSON document on stdout;
   * otherwise `human` is called to print text. Call once per command.
   */
  result(value: unknown, human: () => void): void {
    if (this.json) {
      if (this.emitted) throw new Error("internal: a command emitted more than one JSON result");
      this.emitted = true;
      this.io.stdout.write(`${JSON.stringify(value ?? null, null, 2)}\n`);
    } else {
      human();
    }
  }

  /** A human line on stdout (suppressed with --json). */
  line(text = ""): void {
    if (!this.json) this.io.stdout.write(`${text}\n`);
  }

  /** A human table on stdout (suppressed with --json). */
  table(headers: readonly string[], rows: readonly (readonly unknown[])[]): void {
    if (!this.json) this.io.stdout.write(formatTable(headers, rows));
  }

  /** Aligned `key: value` lines on stdout (suppressed with --json). */
  fields(pairs: readonly (readonly [string, unknown])[]): void {
    if (this.json) return;
    const w = Math.max(...pairs.map(([k]) => k.length)) + 1;
    for (const [k, v] of pairs) this.io.stdout.write(`${`${k}:`.padEnd(w)}  ${cell(v)}\n`);
  }

  /** A note for humans on stderr (never pollutes stdout). */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`);
  }
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return "-";
  if (typeof v === "string") return v;
  return String(v);
}

/** Left-aligned columns separated by two spaces; no trailing whitespace. */
export function formatTable(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const all = [headers.map(cell), ...rows.map((r) => headers.map((_, i) => cell(r[i])))];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
  return `${all
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n")}\n`;
}
