/**
 * Fleet command runs for humans (pure; unit-tested): remote output prefixed by agent name, escaped
 * so it can never drive the operator's terminal, and the summary table.
 */
import type { ResponseBody } from "@orch/client";
import { count } from "./units.js";
import { idsOnly, type OperatorNames } from "../operator-names.js";

export type CommandRun = ResponseBody<"/api/v1/runs/{id}", "get">;
export type CommandRunSummary = ResponseBody<"/api/v1/runs", "get">["runs"][number];
export type RunAgent = NonNullable<CommandRun["agents"]>[number];
export type Encoding = RunAgent["stdout_encoding"] & string;

/** Statuses that count as failures (exit non-zero); mirrors COMMAND_FAILED_STATUSES in @orch/contracts. */
const FAILED = new Set(["failed", "timed_out", "unreachable", "lost", "not_approved", "not_found"]);
export const isFailed = (status: string) => FAILED.has(status);
export const runFinal = (status: string) => status !== "running" && status !== "cancelling";

const hex = (b: number) => `\\x${b.toString(16).padStart(2, "0")}`;

/** Length of the valid UTF-8 sequence at `i`, or 0. */
function utf8Len(b: Uint8Array, i: number): number {
  const c = b[i]!;
  let n: number;
  let min: number;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) [n, min] = [2, 0x80];
  else if (c >= 0xe0 && c <= 0xef) [n, min] = [3, 0x800];
  else if (c >= 0xf0 && c <= 0xf4) [n, min] = [4, 0x10000];
  else return 0;
  if (i + n > b.length) return 0;
  let cp = c & (0xff >> (n + 1));
  for (let k = 1; k < n; k++) {
    const x = b[i + k]!;
    if ((x & 0xc0) !== 0x80) return 0;
    cp = (cp << 6) | (x & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

/**
 * Bytes as printable text: valid UTF-8 is kept except control characters (C0 but tab and newline,
 * DEL, C1), which become `\xNN` (`\u{NN}` for C1) like every byte that is not valid UTF-8. An
 * escape sequence sent by a remote command is therefore shown, never obeyed.
 */
export function escapeBytes(b: Uint8Array): string {
  let out = "";
  for (let i = 0; i < b.length; ) {
    const n = utf8Len(b, i);
    if (n === 0) {
      out += hex(b[i]!);
      i++;
      continue;
    }
    if (n === 1) {
      const c = b[i]!;
      out += (c < 0x20 && c !== 0x09 && c !== 0x0a) || c === 0x7f ? hex(c) : String.fromCharCode(c);
    } else {
      const ch = Buffer.from(b.subarray(i, i + n)).toString("utf8");
      const cp = ch.codePointAt(0)!;
      out += cp >= 0x80 && cp <= 0x9f ? `\\u{${cp.toString(16)}}` : ch;
    }
    i += n;
  }
  return out;
}

/** An API output field (string + encoding) as escaped text. */
export function escapeOutput(data: string, encoding: Encoding): string {
  return escapeBytes(encoding === "base64" ? Buffer.from(data, "base64") : Buffer.from(data, "utf8"));
}

const COLORS = [36, 33, 35, 32, 34, 96, 93, 95, 92, 94];

/** A stable colour per agent name. */
export function nameColor(name: string): number {
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.codePointAt(0)!) >>> 0;
  return COLORS[h % COLORS.length]!;
}

/** `name | ` with the name padded to `width` (and coloured on a terminal). */
export function prefix(name: string, width: number, color: boolean): string {
  const safe = escapeBytes(Buffer.from(name, "utf8"));
  const padded = safe.padEnd(width);
  return `${color ? `\x1b[${nameColor(safe)}m${padded}\x1b[0m` : padded} | `;
}

/**
 * Turns output chunks into whole prefixed lines: a chunk may end mid-line, so the rest waits for
 * the next chunk of the same agent and stream (or `flush` when the agent ended).
 */
export class LinePrefixer {
  private readonly partial = new Map<string, string>();
  width = 0;

  constructor(private readonly color: boolean) {}

  /** The complete lines of this chunk, prefixed. */
  push(name: string, stream: string, data: string, encoding: Encoding): string[] {
    const key = `${name}\n${stream}`;
    const text = (this.partial.get(key) ?? "") + escapeOutput(data, encoding);
    const parts = text.split("\n");
    const rest = parts.pop()!;
    if (rest === "") this.partial.delete(key);
    else this.partial.set(key, rest);
    return parts.map((l) => this.line(name, l));
  }

  /** Whatever is left of this agent's lines (output that did not end with a newline). */
  flush(name: string): { stream: string; line: string }[] {
    const out: { stream: string; line: string }[] = [];
    for (const [key, rest] of this.partial) {
      const [n, stream] = key.split("\n") as [string, string];
      if (n !== name) continue;
      this.partial.delete(key);
      out.push({ stream, line: this.line(name, rest) });
    }
    return out;
  }

  /** Agents with unfinished lines. */
  names(): string[] {
    return [...new Set([...this.partial.keys()].map((k) => k.split("\n")[0]!))];
  }

  private line(name: string, text: string) {
    return `${prefix(name, this.width, this.color)}${text}`;
  }
}

/** 1234 → "1.2s", 61000 → "1m1s". */
export function runDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms <= 0) return "-";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${s % 60}s`;
}

export const SUMMARY_COLUMNS = ["NAME", "STATUS", "EXIT", "DURATION"];

export function summaryRows(agents: readonly RunAgent[]): unknown[][] {
  return agents.map((a) => [
    escapeBytes(Buffer.from(a.name, "utf8")),
    a.signal ? `${a.status} (${a.signal})` : a.status,
    a.exit_code ?? "-",
    runDuration(a.duration_ms),
  ]);
}

/** "2 succeeded, 1 failed" from the counts (statuses with 0 left out). */
export function countsLine(run: Pick<CommandRun, "counts" | "targets" | "status">): string {
  const parts = Object.entries(run.counts)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${n} ${s}`);
  return `run ${run.status}: ${count(run.targets, "agent")}${parts.length ? ` (${parts.join(", ")})` : ""}`;
}

/** Exit status of `orchctl run`: 0 iff every target succeeded, 130 when cancelled, else 1. */
export function runExitCode(run: Pick<CommandRun, "status" | "counts">): number {
  if (run.status === "cancelled") return 130;
  const bad = Object.entries(run.counts).some(([s, n]) => n > 0 && s !== "succeeded");
  return bad || run.status !== "completed" ? 1 : 0;
}

export const RUN_COLUMNS = ["ID", "STATUS", "TARGETS", "COMMAND", "STARTED_BY", "CREATED"];

export function runCommandText(run: Pick<CommandRun, "command" | "script">): string {
  const text = run.command
    ? run.command.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(" ")
    : `script (${count(Buffer.byteLength(run.script ?? "", "utf8"), "byte")})`;
  const safe = escapeBytes(Buffer.from(text, "utf8")).replace(/\n/g, "\\n");
  return safe.length > 60 ? `${safe.slice(0, 59)}…` : safe;
}

export function runRows(runs: readonly CommandRunSummary[]): unknown[][] {
  return runs.map((r) => [r.id, r.status, r.targets, runCommandText(r), r.started_by.name, r.created_at]);
}

export function runFields(run: CommandRun, names: OperatorNames = idsOnly): [string, unknown][] {
  return [
    ["id", run.id],
    ["status", run.status],
    [run.selector !== null ? "selector" : "nodes", run.selector ?? (run.node_ids ?? []).join(", ")],
    ["command", runCommandText(run)],
    ["timeout", `${run.timeout_s}s`],
    ["batch", run.batch],
    ["max_failures", run.max_failures],
    ["maintenance_window", run.maintenance_window],
    ["started_by", run.started_by.name],
    ["cancelled_by", names(run.cancelled_by)],
    ["created_at", run.created_at],
    ["finished_at", run.finished_at],
    ["targets", countsLine(run)],
  ];
}
