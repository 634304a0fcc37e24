/** orchctl apply <agent> -m a,b | plan <agent> -m a,b | drift <agent> [--check] — plus following an operation. */
import type { Command } from "commander";
import { unwrap, type DriftRecord, type StateOperation as Operation } from "@orch/client";
import { action, type Context } from "../context.js";
import { AGENT_ARG, resolveNodeId } from "../agent-lookup.js";
import { CliError, ExitStatus, ProblemError } from "../errors.js";
import { driftLines, isOpen, operationLines } from "../format/operations.js";
import type { CliIO } from "../output.js";

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

/** Each line through ctx.out.line (suppressed with --json). */
export function printLines(ctx: Context, lines: readonly string[]): void {
  for (const l of lines) ctx.out.line(l);
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
    op = unwrap(
      await ctx.api.GET("/api/v1/state/operations/{operation_id}", { params: { path: { operation_id: op.id } } }),
    );
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

interface ApplyOpts {
  modules: string;
  wait: boolean;
  reason?: string;
  breakGlass?: boolean;
}

/** The approval fields of an apply's body (docs/approvals.md), checked before anything is sent. */
export function approvalBody(opts: { reason?: string; breakGlass?: boolean }): {
  reason?: string;
  break_glass?: boolean;
} {
  if (opts.breakGlass && !opts.reason?.trim())
    throw new CliError(
      "--break-glass needs --reason TEXT: a bypass of an approval policy is audited with its reason",
      "break_glass_reason_required",
    );
  return {
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    ...(opts.breakGlass ? { break_glass: true } : {}),
  };
}

function applyOrPlan(program: Command, io: CliIO, kind: "apply" | "plan"): void {
  const cmd = program
    .command(kind)
    .description(
      kind === "apply"
        ? "apply modules to an agent and follow it to the end"
        : "plan modules against an agent (nothing changes) and show the diffs",
    )
    .argument("<agent>", AGENT_ARG)
    .requiredOption("-m, --modules <list>", "comma-separated module names")
    .option("--no-wait", "start the operation and print it without following it");
  if (kind === "apply")
    cmd
      .option("--reason <text>", "why (kept with the change request when an approval policy holds the apply)")
      .option("--break-glass", "admins: apply without the approval a policy asks for (needs --reason; audited)");
  cmd.action(
    action(io, async (ctx, agent: string, opts: ApplyOpts) => {
      const modules = parseModules(opts.modules);
      const approval = kind === "apply" ? approvalBody(opts) : {};
      const node_id = await resolveNodeId(ctx, agent);
      let op = unwrap(
        await ctx.api.POST(`/api/v1/agents/{node_id}/${kind}`, {
          params: { path: { node_id } },
          body: { modules, ...approval },
        }),
      );
      const color = useColor(ctx);
      if (kind === "apply" && op.change_request_id) {
        const id = op.change_request_id;
        ctx.out.result(op, () =>
          ctx.out.line(
            `apply to ${op.node_name || op.node_id} held for approval: change request ${id} (plan ${op.id}) — orchctl requests show ${id}`,
          ),
        );
        return;
      }
      if (opts.wait) {
        ctx.out.note(`${kind} ${op.id} on ${op.node_name || op.node_id}: ${op.status}`);
        op = await followOperation(ctx, op);
      }
      ctx.out.result(op, () => printLines(ctx, operationLines(op, color)));
      if (!ctx.json && failedStatus(op.status))
        // The code (the operation's error_code) follows in parentheses: not in the message too.
        throw new CliError(`${kind} ${op.status}`, op.error_code ?? `operation_${op.status}`);
    }),
  );
}

/** `drift --check`'s exit statuses, for scripts and CI (help text and docs/modules.md#orchctl). */
export const DRIFT_EXIT = { inSync: 0, drifted: 1, error: 2 } as const;

const DRIFT_HELP = `
Exit status with --check: ${DRIFT_EXIT.inSync} the agent is in sync, ${DRIFT_EXIT.drifted} drift was found, ${DRIFT_EXIT.error} the check could not run
(an unknown agent, no apply snapshot yet, the agent unreachable, ...). Without --check: 0, or 1 on an error.`;

/** Runs a drift check and returns its record; any failure exits with DRIFT_EXIT.error, not 1 (which means drift). */
async function checkDrift(ctx: Context, agent: string): Promise<DriftRecord> {
  try {
    const a = { params: { path: { node_id: await resolveNodeId(ctx, agent) } } };
    const started = unwrap(await ctx.api.POST("/api/v1/agents/{node_id}/drift", a));
    const op = await followOperation(ctx, started.operation);
    if (op.status !== "succeeded" && op.status !== "failed")
      throw new CliError(`drift check ${op.status}`, op.error_code ?? `operation_${op.status}`);
    return unwrap(await ctx.api.GET("/api/v1/agents/{node_id}/drift/latest", a));
  } catch (err) {
    const e =
      err instanceof CliError ? err : new CliError(err instanceof Error ? err.message : String(err), "internal");
    e.exitCode = DRIFT_EXIT.error;
    throw e;
  }
}

function drift(program: Command, io: CliIO): void {
  program
    .command("drift")
    .description("show an agent's latest drift record, or run a drift check with --check")
    .argument("<agent>", AGENT_ARG)
    .option("--check", "plan the agent's last successful apply snapshot now (exit 1 when drift is found)")
    .addHelpText("after", DRIFT_HELP)
    .action(
      action(io, async (ctx, agent: string, opts: { check?: boolean }) => {
        const color = useColor(ctx);
        if (opts.check) {
          const record = await checkDrift(ctx, agent);
          ctx.out.result(record, () => printLines(ctx, driftLines(record, color)));
          // The verdict line above already says so: no "error:" line, just the status.
          if (record.drifted) throw new ExitStatus("", "drift_found", DRIFT_EXIT.drifted);
          return;
        }
        const a = { params: { path: { node_id: await resolveNodeId(ctx, agent) } } };
        let record: DriftRecord;
        try {
          record = unwrap(await ctx.api.GET("/api/v1/agents/{node_id}/drift/latest", a));
        } catch (err) {
          // No record yet is what a first look at a fresh agent finds: say how to make one (a
          // second line under the error on stderr; --json keeps the server's problem as it is).
          if (err instanceof ProblemError && err.code === "drift_not_found")
            throw new ProblemError(
              err.problem,
              `${err.message}\nhint: no drift check has run on ${agent} yet; run one with: orchctl drift ${agent} --check`,
            );
          throw err;
        }
        ctx.out.result(record, () => printLines(ctx, driftLines(record, color)));
      }),
    );
}

export function register(program: Command, io: CliIO): void {
  applyOrPlan(program, io, "apply");
  applyOrPlan(program, io, "plan");
  drift(program, io);
}
