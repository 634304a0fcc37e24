/** orchctl assignments create | list | show | rm | apply | plan */
import type { Command } from "commander";
import { action, type Context } from "../context.js";
import { CliError } from "../errors.js";
import type { CliIO } from "../output.js";
import {
  isOpen,
  operationHeadline,
  paintStatus,
  parseModules,
  printResults,
  sleep,
  useColor,
  type Operation,
} from "./apply.js";
import { pages, parseLimit } from "./modules.js";

export interface Assignment {
  name: string;
  selector: string;
  modules: string[];
  description: string | null;
  created_at: string;
  created_by: string;
}

interface AssignmentPage {
  assignments: Assignment[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface Run {
  run_id: string;
  assignment: string;
  kind: string;
  status: string;
  selector: string;
  modules: string[];
  batch_size: number;
  batches: number;
  max_failures: number | null;
  failures: number;
  created_at: string;
  finished_at: string | null;
  operations: Array<{ operation_id: string | null; node_id: string; name: string; batch: number; status: string }>;
}

const POLL_MS = 500;

/**
 * Follows a fan-out: one stderr line per agent whose status changes, until the run ends. Returns
 * the final run and the finished operations (with results) of every agent that ran.
 */
async function followRun(ctx: Context, run: Run, color: boolean): Promise<{ run: Run; ops: Operation[] }> {
  const seen = new Map<string, string>();
  const report = (r: Run) => {
    for (const o of r.operations) {
      if (seen.get(o.node_id) === o.status) continue;
      seen.set(o.node_id, o.status);
      if (o.status !== "queued") ctx.out.note(`  ${(o.name || o.node_id).padEnd(20)} ${paintStatus(color, o.status)}`);
    }
  };
  report(run);
  while (run.status === "running") {
    await sleep(POLL_MS);
    run = await ctx.api<Run>(
      "GET",
      `/assignments/${encodeURIComponent(run.assignment)}/runs/${run.run_id}`,
      undefined,
      { auth: true },
    );
    report(run);
  }
  const ops: Operation[] = [];
  for (const o of run.operations) {
    if (o.operation_id && !isOpen(o.status))
      ops.push(await ctx.api<Operation>("GET", `/state/operations/${o.operation_id}`, undefined, { auth: true }));
  }
  return { run, ops };
}

export function register(program: Command, io: CliIO): void {
  const asg = program.command("assignments").description("assignments: modules for the agents a selector matches");

  asg
    .command("create")
    .description("create an assignment")
    .argument("<name>", "assignment name")
    .requiredOption("--selector <selector>", "`*`, or terms like `env=test,role in (web,db)`")
    .requiredOption("-m, --modules <list>", "comma-separated module names")
    .option("--description <text>", "description")
    .action(
      action(io, async (ctx, name: string, opts: { selector: string; modules: string; description?: string }) => {
        const a = await ctx.api<Assignment>(
          "POST",
          "/assignments",
          { name, selector: opts.selector, modules: parseModules(opts.modules), description: opts.description ?? null },
          { auth: true },
        );
        ctx.out.result(a, () => ctx.out.line(`Created assignment ${a.name}: ${a.selector} → ${a.modules.join(", ")}`));
      }),
    );

  asg
    .command("list")
    .description("list assignments")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue after a previous page's next_cursor")
    .option("--all", "fetch every page")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string; all?: boolean }) => {
        const page = await pages<Assignment, AssignmentPage>(ctx, "/assignments", "assignments", {
          limit: parseLimit(opts.limit),
          cursor: opts.cursor,
          all: opts.all,
        });
        ctx.out.result(page, () => {
          ctx.out.table(
            ["NAME", "SELECTOR", "MODULES", "DESCRIPTION"],
            page.assignments.map((a) => [a.name, a.selector, a.modules.join(","), a.description]),
          );
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more assignments: orchctl assignments list --cursor ${page.next_cursor} (or --all)`);
        });
      }),
    );

  asg
    .command("show")
    .description("show one assignment")
    .argument("<name>", "assignment name")
    .action(
      action(io, async (ctx, name: string) => {
        const a = await ctx.api<Assignment>("GET", `/assignments/${encodeURIComponent(name)}`, undefined, {
          auth: true,
        });
        ctx.out.result(a, () =>
          ctx.out.fields([
            ["name", a.name],
            ["selector", a.selector],
            ["modules", a.modules.join(", ")],
            ["description", a.description],
            ["created_at", a.created_at],
            ["created_by", a.created_by],
          ]),
        );
      }),
    );

  asg
    .command("rm")
    .alias("remove")
    .description("delete an assignment")
    .argument("<name>", "assignment name")
    .action(
      action(io, async (ctx, name: string) => {
        await ctx.api("DELETE", `/assignments/${encodeURIComponent(name)}`, undefined, { auth: true });
        ctx.out.result({ removed: true, name }, () => ctx.out.line(`Deleted assignment ${name}`));
      }),
    );

  for (const kind of ["apply", "plan"] as const) {
    asg
      .command(kind)
      .description(`${kind} an assignment on every approved agent its selector matches, with live per-agent progress`)
      .argument("<name>", "assignment name")
      .option("--batch <n|p%>", "rolling: agents per batch, or a percentage such as 25%")
      .option("--max-failures <n>", "stop launching batches once more operations than this failed")
      .option("--no-wait", "start the fan-out and print it without following it")
      .action(
        action(io, async (ctx, name: string, opts: { batch?: string; maxFailures?: string; wait: boolean }) => {
          const body: Record<string, unknown> = {};
          if (opts.batch !== undefined) body.batch = /^\d+$/.test(opts.batch) ? Number(opts.batch) : opts.batch;
          if (opts.maxFailures !== undefined) {
            const n = Number(opts.maxFailures);
            if (!Number.isInteger(n) || n < 0)
              throw new CliError("--max-failures must be a non-negative integer", "invalid_argument");
            body.max_failures = n;
          }
          const color = useColor(ctx);
          let run = await ctx.api<Run>("POST", `/assignments/${encodeURIComponent(name)}/${kind}`, body, {
            auth: true,
          });
          if (!opts.wait) {
            ctx.out.result(run, () =>
              ctx.out.line(
                `${kind} of ${run.assignment} started on ${run.operations.length} agent(s): run ${run.run_id}`,
              ),
            );
            return;
          }
          ctx.out.note(
            `${kind} of ${run.assignment} (${run.selector}) on ${run.operations.length} agent(s), run ${run.run_id}`,
          );
          const followed = await followRun(ctx, run, color);
          run = followed.run;
          ctx.out.result({ ...run, results: followed.ops }, () => {
            for (const op of followed.ops) {
              ctx.out.line(operationHeadline(op, color));
              printResults(ctx, op, color);
            }
            for (const o of run.operations.filter((x) => x.status === "not_started"))
              ctx.out.line(`${kind} on ${o.name || o.node_id}: ${paintStatus(color, "not_started")}`);
            ctx.out.line(
              `run ${run.run_id} ${run.status}: ${run.operations.length} agent(s), ${run.failures} failure(s)`,
            );
          });
          if (!ctx.json && (run.failures > 0 || run.status !== "completed"))
            throw new CliError(
              `${kind} of ${run.assignment} ${run.status} with ${run.failures} failure(s)`,
              `run_${run.status}`,
            );
        }),
      );
  }
}
