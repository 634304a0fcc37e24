/** orchctl apply <agent> -m a,b | plan <agent> -m a,b | drift <agent> [--check] — plus the shared rendering of operations. */
import type { Command } from "commander";
import { action, type Context } from "../context.js";
import { CliError } from "../errors.js";
import type { CliIO } from "../output.js";

export interface Summary {
  ok: number;
  changed: number;
  failed: number;
  skipped: number;
  unsupported: number;
}

export interface ResourceResult {
  id: string;
  module: string;
  type: string;
  status: string;
  changed: boolean;
  diff: string;
  message: string;
  duration_ms: number;
  has_output: boolean;
}

export interface Operation {
  id: string;
  node_id: string;
  node_name: string;
  kind: string;
  modules: string[];
  status: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  actor: { id: string; name: string };
  summary: Summary;
  error_code: string | null;
  error: string | null;
  assignment: string | null;
  run_id: string | null;
  results?: ResourceResult[];
}

export interface DriftRecord {
  id: string;
  node_id: string;
  operation_id: string;
  checked_at: string;
  drifted: boolean;
  resources: Array<{ module: string; id: string; type: string; status: string; diff: string; message: string }>;
}

export const isOpen = (status: string) => status === "pending" || status === "running";
const POLL_MS = 500;
/** Operations end by their deadline (600 s by default); this only guards against a server that never says so. */
const POLL_LIMIT_MS = 3 * 3_600_000;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Colour only for a terminal, never with --json or NO_COLOR. */
export function useColor(ctx: Context): boolean {
  if (ctx.json || ctx.env.NO_COLOR !== undefined) return false;
  if (ctx.env.FORCE_COLOR !== undefined && ctx.env.FORCE_COLOR !== "0") return true;
  return Boolean((ctx.io.stdout as { isTTY?: boolean }).isTTY);
}

const paint = (on: boolean, code: number, s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);

/** A unified diff with added lines green, removed lines red, hunk headers cyan. */
export function colorDiff(diff: string, on: boolean): string {
  return diff
    .split("\n")
    .map((l) => {
      if (l.startsWith("+++") || l.startsWith("---")) return paint(on, 1, l);
      if (l.startsWith("+")) return paint(on, 32, l);
      if (l.startsWith("-")) return paint(on, 31, l);
      if (l.startsWith("@@")) return paint(on, 36, l);
      return l;
    })
    .join("\n");
}

const STATUS_COLOR: Record<string, number> = {
  ok: 32,
  succeeded: 32,
  changed: 33,
  failed: 31,
  timed_out: 31,
  unreachable: 31,
  skipped: 90,
  unsupported: 35,
  not_started: 90,
};
/** A status word, padded to `width` before colouring so columns line up either way. */
export const paintStatus = (on: boolean, s: string, width = 0, label = s) =>
  paint(on && STATUS_COLOR[s] !== undefined, STATUS_COLOR[s] ?? 0, label.padEnd(width));

export function summaryText(s: Summary): string {
  return (
    (["changed", "ok", "failed", "skipped", "unsupported"] as const)
      .filter((k) => s[k])
      .map((k) => `${s[k]} ${k}`)
      .join(", ") || "no resources"
  );
}

/** Per-resource lines (and diffs of what changes) of a finished operation. */
export function printResults(ctx: Context, op: Operation, color: boolean, indent = "  "): void {
  for (const r of op.results ?? []) {
    ctx.out.line(
      `${indent}${paintStatus(color, r.status, 11)} ${r.module}/${r.id} (${r.type})${r.message && r.status !== "ok" ? ` — ${r.message.split("\n")[0]}` : ""}`,
    );
    if (r.changed && r.diff.trim())
      ctx.out.line(colorDiff(r.diff.replace(/\n$/, ""), color).replace(/^/gm, `${indent}    `));
  }
}

export function operationHeadline(op: Operation, color: boolean): string {
  const who = op.node_name || op.node_id;
  const why = op.error_code ? ` (${op.error_code}${op.error ? `: ${op.error}` : ""})` : "";
  return `${op.kind} ${op.id} on ${who}: ${paintStatus(color, op.status)}${why}${isOpen(op.status) ? "" : ` — ${summaryText(op.summary)}`}`;
}

/** Polls an operation until it ends, telling a human about each status change on stderr. */
export async function followOperation(ctx: Context, op: Operation): Promise<Operation> {
  let last = op.status;
  const until = Date.now() + POLL_LIMIT_MS;
  while (isOpen(op.status)) {
    if (Date.now() > until)
      throw new CliError(
        `operation ${op.id} is still ${op.status}; check it with orchctl ops show ${op.id}`,
        "still_running",
      );
    await sleep(POLL_MS);
    op = await ctx.api<Operation>("GET", `/state/operations/${op.id}`, undefined, { auth: true });
    if (op.status !== last && isOpen(op.status)) ctx.out.note(`${op.node_name || op.node_id}: ${op.status}`);
    last = op.status;
  }
  return op;
}

export function parseModules(v: string | undefined): string[] {
  const mods = (v ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!mods.length) throw new CliError("name at least one module with -m mod1,mod2", "invalid_argument");
  return mods;
}

const failedStatus = (s: string) => s === "failed" || s === "timed_out" || s === "unreachable";

export function register(program: Command, io: CliIO): void {
  for (const kind of ["apply", "plan"] as const) {
    program
      .command(kind)
      .description(
        kind === "apply"
          ? "apply modules to an agent and follow it to the end"
          : "plan modules against an agent (nothing changes) and show the diffs",
      )
      .argument("<agent>", "node id or agent name")
      .requiredOption("-m, --modules <list>", "comma-separated module names")
      .option("--no-wait", "start the operation and print it without following it")
      .action(
        action(io, async (ctx, agent: string, opts: { modules: string; wait: boolean }) => {
          const modules = parseModules(opts.modules);
          let op = await ctx.api<Operation>(
            "POST",
            `/agents/${encodeURIComponent(agent)}/${kind}`,
            { modules },
            { auth: true },
          );
          const color = useColor(ctx);
          if (opts.wait) {
            ctx.out.note(`${kind} ${op.id} on ${op.node_name || op.node_id}: ${op.status}`);
            op = await followOperation(ctx, op);
          }
          ctx.out.result(op, () => {
            ctx.out.line(operationHeadline(op, color));
            printResults(ctx, op, color);
          });
          if (!ctx.json && failedStatus(op.status))
            throw new CliError(
              `${kind} ${op.status}${op.error_code ? ` (${op.error_code})` : ""}`,
              op.error_code ?? `operation_${op.status}`,
            );
        }),
      );
  }

  program
    .command("drift")
    .description("show an agent's latest drift record, or run a drift check with --check")
    .argument("<agent>", "node id or agent name")
    .option("--check", "plan the agent's last successful apply snapshot now")
    .action(
      action(io, async (ctx, agent: string, opts: { check?: boolean }) => {
        const color = useColor(ctx);
        const a = encodeURIComponent(agent);
        let record: DriftRecord;
        if (opts.check) {
          const started = await ctx.api<{ operation: Operation; drift: DriftRecord | null }>(
            "POST",
            `/agents/${a}/drift`,
            undefined,
            { auth: true },
          );
          const op = await followOperation(ctx, started.operation);
          if (op.status !== "succeeded" && op.status !== "failed")
            throw new CliError(
              `drift check ${op.status}${op.error_code ? ` (${op.error_code})` : ""}`,
              op.error_code ?? `operation_${op.status}`,
            );
          record = await ctx.api<DriftRecord>("GET", `/agents/${a}/drift/latest`, undefined, { auth: true });
        } else {
          record = await ctx.api<DriftRecord>("GET", `/agents/${a}/drift/latest`, undefined, { auth: true });
        }
        ctx.out.result(record, () => {
          ctx.out.line(
            `${record.drifted ? paintStatus(color, "failed", 0, "drifted") : paintStatus(color, "ok", 0, "in sync")}: ${record.resources.length} resource${record.resources.length === 1 ? "" : "s"} differ (checked ${record.checked_at}, drift ${record.id}, operation ${record.operation_id})`,
          );
          for (const r of record.resources) {
            ctx.out.line(
              `  ${paintStatus(color, r.status)} ${r.module}/${r.id} (${r.type})${r.message ? ` — ${r.message.split("\n")[0]}` : ""}`,
            );
            if (r.diff.trim()) ctx.out.line(colorDiff(r.diff.replace(/\n$/, ""), color).replace(/^/gm, "      "));
          }
        });
      }),
    );
}
