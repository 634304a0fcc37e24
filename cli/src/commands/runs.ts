/**
 * orchctl run <selector> -- argv... | runs list|show|cancel — fleet command runs (docs/runs.md).
 * `run` starts the run, follows GET /runs/{id}/stream printing `name | line` (NDJSON events with
 * --json), then the summary table; exit 0 iff every agent succeeded, 130 when cancelled, else 1.
 * Ctrl-C once cancels the run and waits for the summary; twice exits at once.
 */
import type { Command } from "commander";
import { readFileSync } from "node:fs";
import { unwrap, type RequestBody } from "@orch/client";
import { resolveNodeId } from "../agent-lookup.js";
import { approvalBody, useColor } from "./apply.js";
import { action, type Context } from "../context.js";
import { CliError, ExitStatus, ProblemError } from "../errors.js";
import {
  countsLine,
  LinePrefixer,
  RUN_COLUMNS,
  runExitCode,
  runFields,
  runFinal,
  runRows,
  SUMMARY_COLUMNS,
  summaryRows,
  type CommandRun,
  type Encoding,
} from "../format/runs.js";
import { apiUrl } from "../http.js";
import type { CliIO } from "../output.js";
import { endReasonText, openSse, type SseStream } from "../sse.js";
import { count } from "../format/units.js";
import { idsOnly, operatorNames } from "../operator-names.js";

const POLL_MS = 1_000;

interface RunOptions {
  node?: string[];
  script?: string;
  timeoutS?: string;
  batch?: string;
  maxFailures?: string;
  env?: string[];
  reason?: string;
  breakGlass?: boolean;
}

const collect = (v: string, prev: string[] | undefined) => [...(prev ?? []), v];

function int(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new CliError(`${flag} must be a whole number`, "invalid_argument");
  return Number(v);
}

/** The POST /runs body from the command line. */
export function runBody(
  selector: string | undefined,
  argv: string[],
  opts: RunOptions,
): RequestBody<"/api/v1/runs", "post"> {
  // With --node every operand is the command (there is no selector operand).
  const command = opts.node?.length ? [...(selector !== undefined ? [selector] : []), ...argv] : argv;
  if (!opts.node?.length && !selector)
    throw new CliError("name a selector (e.g. 'role=web', or '*') or agents with --node", "invalid_argument");
  if (opts.script !== undefined && command.length > 0)
    throw new CliError("give either --script FILE or a command after --, not both", "invalid_argument");
  if (opts.script === undefined && command.length === 0)
    throw new CliError("give the command after --, e.g. orchctl run 'role=web' -- uptime", "invalid_argument");
  const env: Record<string, string> = {};
  for (const kv of opts.env ?? []) {
    const i = kv.indexOf("=");
    if (i <= 0) throw new CliError("--env takes NAME=value", "invalid_argument");
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  const batch = opts.batch === undefined ? undefined : /^\d+$/.test(opts.batch) ? Number(opts.batch) : opts.batch;
  const timeout = int(opts.timeoutS, "--timeout-s");
  const maxFailures = int(opts.maxFailures, "--max-failures");
  return {
    ...(opts.node?.length ? { node_ids: opts.node } : { selector }),
    ...(opts.script !== undefined ? { script: readFileSync(opts.script, "utf8") } : { command }),
    ...(Object.keys(env).length ? { env } : {}),
    ...(timeout !== undefined ? { timeout_s: timeout } : {}),
    ...(batch !== undefined ? { batch } : {}),
    ...(maxFailures !== undefined ? { max_failures: maxFailures } : {}),
    ...approvalBody(opts),
  };
}

/** Opens GET /runs/{id}/stream; `done` resolves when the server closes it (or rejects with the problem). */
async function openStream(
  ctx: Context,
  id: string,
  onEvent: (event: string, data: string) => void,
): Promise<SseStream> {
  const server = await ctx.orch.server();
  return openSse({
    url: new URL(apiUrl(server, `/runs/${encodeURIComponent(id)}/stream`)),
    token: await ctx.orch.token(server),
    timeoutMs: ctx.timeoutMs,
    onFrame: (f) => onEvent(f.event, f.data),
  });
}

/** Follows a run to its end, printing as it goes; returns the final run (agents without output). */
async function follow(ctx: Context, first: CommandRun, current: { stream?: SseStream }): Promise<CommandRun> {
  const color = useColor(ctx);
  const lines = new LinePrefixer(color);
  lines.width = Math.max(0, ...(first.agents ?? []).map((a) => a.name.length));
  let summary: CommandRun | undefined;
  const print = (stream: string, line: string) =>
    (stream === "stderr" ? ctx.io.stderr : ctx.io.stdout).write(`${line}\n`);
  const flush = (name: string) => {
    for (const r of lines.flush(name)) print(r.stream, r.line);
  };
  const stream = await openStream(ctx, first.id, (event, data) => {
    if (ctx.json) {
      ctx.io.stdout.write(`${JSON.stringify({ event, data: JSON.parse(data) as unknown })}\n`);
      if (event === "summary") summary = JSON.parse(data) as CommandRun;
      return;
    }
    const d = JSON.parse(data) as Record<string, unknown>;
    switch (event) {
      case "output": {
        const o = d as { name: string; stream: string; data: string; encoding: Encoding };
        for (const l of lines.push(o.name, o.stream, o.data, o.encoding)) print(o.stream, l);
        break;
      }
      case "agent": {
        const a = d as { name: string; status: string };
        if (a.status !== "queued" && a.status !== "running") flush(a.name);
        break;
      }
      case "summary":
        summary = d as unknown as CommandRun;
        break;
      case "error":
        // The gateway ended the stream (the login ended, or an agent left the operator's scope).
        ctx.out.note(`stream ended: ${endReasonText(String(d.code ?? ""))}`);
        break;
    }
  });
  current.stream = stream;
  try {
    await stream.done;
  } catch (err) {
    if (err instanceof ProblemError) throw err;
    ctx.out.note(`stream interrupted (${(err as Error).message}); waiting for the run to end`);
  }
  for (const name of lines.names()) flush(name);
  // The stream ended early (network, gateway restart): the run's own record tells how it ended.
  while (!summary || !runFinal(summary.status)) {
    const r = unwrap(
      await ctx.api.GET("/api/v1/runs/{id}", { params: { path: { id: first.id }, query: { output: false } } }),
    );
    if (runFinal(r.status)) summary = r;
    else await new Promise((res) => setTimeout(res, POLL_MS));
  }
  return summary;
}

/**
 * Ctrl-C once: cancel the run and keep following it to the summary; twice: exit at once (130).
 * Only in the real process (tests call run() in-process and never signal themselves). Installed
 * as soon as the run exists, so no Ctrl-C leaves it running unnoticed.
 */
function cancelOnInterrupt(ctx: Context, id: string, current: { stream?: SseStream }) {
  if (ctx.io.stdout !== process.stdout) return;
  let interrupts = 0;
  process.on("SIGINT", () => {
    if (++interrupts > 1) {
      current.stream?.destroy();
      process.exit(130);
    }
    ctx.out.note("cancelling… (Ctrl-C again to exit without waiting)");
    ctx.api.POST("/api/v1/runs/{id}/cancel", { params: { path: { id } } }).catch((err: unknown) => {
      // A run that ended meanwhile has nothing to cancel; the summary follows anyway.
      if (!(err instanceof ProblemError && err.problem.code === "run_finished"))
        ctx.out.note(`cancel failed: ${(err as Error).message}`);
    });
  });
}

/** Ends the command with the run's exit status. */
function finish(run: CommandRun) {
  const code = runExitCode(run);
  if (code === 0) return;
  throw new ExitStatus(countsLine(run), run.status === "cancelled" ? "run_cancelled" : "run_failed", code);
}

function run(program: Command, io: CliIO) {
  program
    .command("run")
    .description("run a command on every agent a selector (or --node) picks, streaming the output")
    .argument("[selector]", "agent selector, e.g. 'role=web' or '*' (omit with --node)")
    .argument("[argv...]", "the command, after --: orchctl run 'role=web' -- uptime")
    .option(
      "--node <agent>",
      "run on this agent: name, node id or short id (repeatable; instead of a selector)",
      collect,
    )
    .option("--script <file>", "run this script file (its #! interpreter, else /bin/sh) instead of a command")
    .option("--timeout-s <seconds>", "kill each agent's process after this long (1-86400, default 300)")
    .option("--batch <n|pct>", "rolling run: agents per batch, e.g. 10 or 25%")
    .option("--max-failures <n>", "stop launching batches once more agents than this failed")
    .option("--env <NAME=value>", "extra environment variable (repeatable; never stored)", collect)
    .option("--reason <text>", "why (kept with the change request when an approval policy holds the run)")
    .option("--break-glass", "admins: run now without the approval a policy asks for (needs --reason; audited)")
    .action((...args: unknown[]) => {
      // What follows `--` is the command even when no selector precedes it (`run --node a -- uptime`).
      const cmd = args.at(-1) as Command;
      const raw = (cmd.parent as unknown as { rawArgs?: string[] } | null)?.rawArgs ?? [];
      const dash = raw.indexOf("--");
      const after = dash >= 0 ? raw.slice(dash + 1) : undefined;
      const operands = cmd.args;
      const before = after ? operands.slice(0, operands.length - after.length) : operands.slice(0, 1);
      const command = after ?? operands.slice(1);
      return start(before[0], command, cmd.opts<RunOptions>(), cmd);
    });
  const start = action(io, async (ctx, selector: string | undefined, argv: string[], opts: RunOptions) => {
    const body = runBody(selector, argv, opts);
    if (body.node_ids) body.node_ids = await Promise.all(body.node_ids.map((ref) => resolveNodeId(ctx, ref)));
    const answer = unwrap(await ctx.api.POST("/api/v1/runs", { body }));
    if (answer.status === "held") {
      // An approval policy holds the run: nothing started, there is nothing to follow.
      const id = answer.change_request_id;
      ctx.out.result(answer, () =>
        ctx.out.line(
          `run held for approval: change request ${id} (${count(answer.targets.length, "agent")}) — orchctl requests show ${id}`,
        ),
      );
      return;
    }
    const started = answer as CommandRun;
    let final: CommandRun;
    if (runFinal(started.status)) {
      // Over at once (no agent matched): the same events the stream would have sent.
      if (ctx.json)
        for (const [event, data] of [
          ["run", started],
          ["summary", started],
          ["end", { status: started.status }],
        ] as const)
          ctx.io.stdout.write(`${JSON.stringify({ event, data })}\n`);
      final = started;
    } else {
      if (!ctx.json) ctx.out.note(`run ${started.id} on ${count(started.targets, "agent")}`);
      const current: { stream?: SseStream } = {};
      cancelOnInterrupt(ctx, started.id, current);
      final = await follow(ctx, started, current);
    }
    if (!ctx.json) {
      if (final.targets === 0) ctx.out.note("no agent matched");
      else {
        ctx.out.line();
        ctx.out.table(SUMMARY_COLUMNS, summaryRows(final.agents ?? []));
      }
      ctx.out.note(countsLine(final));
    }
    finish(final);
  });
}

function runs(program: Command, io: CliIO) {
  const runs = program.command("runs").description("fleet command runs (started with orchctl run)");
  runs
    .command("list")
    .description("list command runs, newest first")
    .option("--status <status>", "only runs with this status (running, completed, cancelled, …)")
    .option("--limit <n>", "page size (1-200, default 50)")
    .option("--cursor <c>", "a previous page's next_cursor")
    .action(
      action(io, async (ctx, opts: { status?: string; limit?: string; cursor?: string }) => {
        const page = unwrap(
          await ctx.api.GET("/api/v1/runs", {
            params: {
              query: {
                ...(opts.status ? { status: opts.status as "running" } : {}),
                ...(opts.limit ? { limit: Number(opts.limit) } : {}),
                ...(opts.cursor ? { cursor: opts.cursor } : {}),
              },
            },
          }),
        );
        ctx.out.result(page, () => {
          ctx.out.table(RUN_COLUMNS, runRows(page.runs));
          if (page.next_cursor) ctx.out.note(`more: --cursor ${page.next_cursor}`);
        });
      }),
    );
  runs
    .command("show")
    .description("one run: every agent's status, exit code and captured output")
    .argument("<id>", "run id")
    .action(
      action(io, async (ctx, id: string) => {
        const r = unwrap(await ctx.api.GET("/api/v1/runs/{id}", { params: { path: { id } } }));
        const names = r.cancelled_by ? await operatorNames(ctx) : idsOnly;
        ctx.out.result(r, () => {
          ctx.out.fields(runFields(r, names));
          const agents = r.agents ?? [];
          if (!agents.length) return;
          ctx.out.line();
          ctx.out.table(SUMMARY_COLUMNS, summaryRows(agents));
          const lines = new LinePrefixer(useColor(ctx));
          lines.width = Math.max(...agents.map((a) => a.name.length));
          for (const a of agents) {
            for (const s of ["stdout", "stderr"] as const) {
              const data = a[s] ?? "";
              if (!data) continue;
              const out = [
                ...lines.push(a.name, s, data, a[`${s}_encoding`] ?? "utf8"),
                ...lines.flush(a.name).map((x) => x.line),
              ];
              if (out.length) ctx.out.line();
              for (const l of out) ctx.out.line(l);
              if (a[`${s}_truncated`]) ctx.out.line(`${a.name}: (${s} truncated)`);
            }
          }
        });
      }),
    );
  runs
    .command("cancel")
    .description("cancel a run: queued agents never start, running processes are signalled")
    .argument("<id>", "run id")
    .action(
      action(io, async (ctx, id: string) => {
        const r = unwrap(await ctx.api.POST("/api/v1/runs/{id}/cancel", { params: { path: { id } } }));
        ctx.out.result(r, () => ctx.out.line(`run ${r.id}: ${r.status}`));
      }),
    );
}

export function register(program: Command, io: CliIO): void {
  run(program, io);
  runs(program, io);
}
