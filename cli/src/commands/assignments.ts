/** orchctl assignments create | update | list | show | rm | apply | plan | runs */
import type { Command } from "commander";
import { unwrap, type RequestBody, type AssignmentRun as Run, type StateOperation as Operation } from "@orch/client";
import { parseLimit } from "../args.js";
import { action, type Context } from "../context.js";
import { operatorNames } from "../operator-names.js";
import { CliError } from "../errors.js";
import {
  ASSIGNMENT_COLUMNS,
  assignmentFields,
  assignmentRows,
  createdLine,
  runFollowingLine,
  runProgressLine,
  RUN_COLUMNS,
  runResultLines,
  runRows,
  runStartedLine,
} from "../format/assignments.js";
import { isOpen } from "../format/operations.js";
import type { CliIO } from "../output.js";
import { listCommand } from "../list-command.js";
import { pages } from "../pages.js";
import { approvalBody, parseModules, printLines, sleep, useColor } from "./apply.js";
import { catalogApproval, printedHeld, withApprovalOptions, type ApprovalOpts } from "./catalog-held.js";
import { count } from "../format/units.js";
import { collectParams } from "../parameters.js";

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
      if (o.status !== "queued") ctx.out.note(runProgressLine(o, color));
    }
  };
  report(run);
  while (run.status === "running") {
    await sleep(POLL_MS);
    run = unwrap(
      await ctx.api.GET("/api/v1/assignments/{name}/runs/{run_id}", {
        params: { path: { name: run.assignment, run_id: run.run_id } },
      }),
    );
    report(run);
  }
  const ops: Operation[] = [];
  for (const o of run.operations) {
    if (o.operation_id && !isOpen(o.status))
      ops.push(
        unwrap(
          await ctx.api.GET("/api/v1/state/operations/{operation_id}", {
            params: { path: { operation_id: o.operation_id } },
          }),
        ),
      );
  }
  return { run, ops };
}

type Sub = (asg: Command, io: CliIO) => void;

const ENFORCE_HELP = "re-apply drifted resources after a scheduled drift check (see docs/enforce.md)";
const PARAM_HELP = "a parameter for the modules, value read as YAML (port=8080, 'hosts=[a, b]'); repeatable";
const PARAMS_FILE_HELP = "a YAML file holding a map of parameters (--param values apply over it)";
const collect = (v: string, prev: string[]) => [...prev, v];

const createCommand = (asg: Command) =>
  asg
    .command("create")
    .description("create an assignment")
    .argument("<name>", "assignment name")
    .requiredOption("--selector <selector>", "`*`, or terms like `env=test,role in (web,db)`")
    .requiredOption("-m, --modules <list>", "comma-separated module names")
    .option("--description <text>", "description")
    .option("--enforce", ENFORCE_HELP)
    .option("--no-enforce", "report drift only (the default)")
    .option("--param <name=value>", PARAM_HELP, collect, [])
    .option("--params-file <file>", PARAMS_FILE_HELP);

const create: Sub = (asg, io) =>
  withApprovalOptions(createCommand(asg)).action(
    action(
      io,
      async (
        ctx,
        name: string,
        opts: {
          selector: string;
          modules: string;
          description?: string;
          enforce?: boolean;
          param: string[];
          paramsFile?: string;
        } & ApprovalOpts,
      ) => {
        const approval = catalogApproval(opts);
        const parameters = await collectParams({}, opts);
        const a = unwrap(
          await ctx.api.POST("/api/v1/assignments", {
            body: {
              name,
              selector: opts.selector,
              modules: parseModules(opts.modules),
              description: opts.description ?? null,
              ...(opts.enforce !== undefined ? { enforce: opts.enforce } : {}),
              ...(Object.keys(parameters).length ? { parameters } : {}),
              ...approval,
            },
          }),
        );
        if (printedHeld(ctx, `assignment ${name}`, a)) return;
        ctx.out.result(a, () => ctx.out.line(createdLine(a)));
      },
    ),
  );

interface UpdateOpts extends ApprovalOpts {
  selector?: string;
  modules?: string;
  module: string[];
  description?: string;
  enforce?: boolean;
  param: string[];
  paramsFile?: string;
  unsetParam: string[];
}

/** The parameters an update sends: the current ones changed as told; undefined when there are none to send. */
async function updatedParams(current: Readonly<Record<string, unknown>>, opts: UpdateOpts) {
  const next = await collectParams(current, opts);
  for (const n of opts.unsetParam) delete next[n];
  return Object.keys(next).length || Object.keys(current).length ? next : undefined;
}

const update: Sub = (asg, io) =>
  withApprovalOptions(asg.command("update"))
    .description("change an assignment's selector, modules or description (what is not given is kept)")
    .argument("<name>", "assignment name")
    .option("--selector <selector>", "`*`, or terms like `env=test,role in (web,db)`")
    .option("-m, --modules <list>", "comma-separated module names (replaces the list)")
    .option("--module <name>", "a module, repeatable (replaces the list; adds to -m)", collect, [])
    .option("--description <text>", 'description ("" clears it)')
    .option("--enforce", ENFORCE_HELP)
    .option("--no-enforce", "stop enforcing: report drift only")
    .option("--param <name=value>", `${PARAM_HELP} (the others are kept)`, collect, [])
    .option("--params-file <file>", "replace every parameter with this YAML file's map (--param values apply over it)")
    .option("--unset-param <name>", "drop a parameter; repeatable", collect, [])
    .action(
      action(io, async (ctx, name: string, opts: UpdateOpts) => {
        const approval = catalogApproval(opts);
        const listed =
          opts.modules !== undefined || opts.module.length
            ? [...(opts.modules !== undefined ? parseModules(opts.modules) : []), ...opts.module]
            : undefined;
        const paramsGiven = opts.param.length > 0 || opts.paramsFile !== undefined || opts.unsetParam.length > 0;
        if (
          opts.selector === undefined &&
          !listed &&
          opts.description === undefined &&
          opts.enforce === undefined &&
          !paramsGiven
        )
          throw new CliError(
            "nothing to change: give --selector, --modules/--module, --description, --enforce/--no-enforce or --param/--params-file/--unset-param",
            "invalid_argument",
          );
        // The API replaces the whole definition: what the command was not told to change is sent back as it is.
        const current = unwrap(await ctx.api.GET("/api/v1/assignments/{name}", { params: { path: { name } } }));
        const parameters = await updatedParams(current.parameters ?? {}, opts);
        const a = unwrap(
          await ctx.api.PUT("/api/v1/assignments/{name}", {
            params: { path: { name } },
            body: {
              selector: opts.selector ?? current.selector,
              modules: listed ?? current.modules,
              description: opts.description === undefined ? current.description : opts.description || null,
              // Absent keeps enforce mode as it is.
              ...(opts.enforce !== undefined ? { enforce: opts.enforce } : {}),
              ...(parameters ? { parameters } : {}),
              ...approval,
            },
          }),
        );
        if (printedHeld(ctx, `assignment ${name}`, a)) return;
        const updated = a;
        ctx.out.result(updated, () =>
          ctx.out.line(
            `Updated assignment ${updated.name}: ${updated.selector} → ${updated.modules.join(", ")}${opts.enforce === undefined ? "" : updated.enforce ? " (enforced)" : " (not enforced)"}`,
          ),
        );
      }),
    );

const list: Sub = (asg, io) =>
  listCommand(asg, io, {
    key: "assignments",
    command: "assignments list",
    description: "list assignments",
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/assignments", { params: { query } })),
    columns: ASSIGNMENT_COLUMNS,
    rows: assignmentRows,
  });

const show: Sub = (asg, io) =>
  asg
    .command("show")
    .description("show one assignment")
    .argument("<name>", "assignment name")
    .action(
      action(io, async (ctx, name: string) => {
        const a = unwrap(await ctx.api.GET("/api/v1/assignments/{name}", { params: { path: { name } } }));
        const names = await operatorNames(ctx);
        ctx.out.result(a, () => ctx.out.fields(assignmentFields(a, names)));
      }),
    );

const remove: Sub = (asg, io) =>
  withApprovalOptions(
    asg.command("rm").alias("remove").description("delete an assignment").argument("<name>", "assignment name"),
  ).action(
    action(io, async (ctx, name: string, opts: ApprovalOpts) => {
      const query = catalogApproval(opts);
      const r = unwrap(await ctx.api.DELETE("/api/v1/assignments/{name}", { params: { path: { name }, query } }));
      if (printedHeld(ctx, `assignment ${name}`, r)) return;
      ctx.out.result({ removed: true, name }, () => ctx.out.line(`Deleted assignment ${name}`));
    }),
  );

interface FanOutOpts {
  batch?: string;
  maxFailures?: string;
  wait: boolean;
  reason?: string;
  breakGlass?: boolean;
}

/** The policy that held an apply and the approvals it needs, for the human line (best effort). */
async function heldPolicy(ctx: Context, id: string): Promise<string | undefined> {
  try {
    const r = unwrap(await ctx.api.GET("/api/v1/change-requests/{id}", { params: { path: { id } } }));
    return `policy ${r.policy}, ${count(r.approvals_required, "approval")} required`;
  } catch {
    return undefined;
  }
}

/** Printed when an approval policy turned the apply into a change request (202). */
export const heldLine = (run: Run, id: string, policy?: string) =>
  `apply of ${run.assignment} held for approval: change request ${id} (${policy ? `${policy}; ` : ""}plan run ${run.run_id} on ${count(run.operations.length, "agent")}) — orchctl requests show ${id}`;

const fanOut =
  (kind: "apply" | "plan"): Sub =>
  (asg, io) => {
    const cmd = asg
      .command(kind)
      .description(`${kind} an assignment on every approved agent its selector matches, with live per-agent progress`)
      .argument("<name>", "assignment name")
      .option("--batch <n|p%>", "rolling: agents per batch, or a percentage such as 25%")
      .option("--max-failures <n>", "stop launching batches once more operations than this failed")
      .option("--no-wait", "start the fan-out and print it without following it");
    if (kind === "apply")
      cmd
        .option("--reason <text>", "why (kept with the change request when an approval policy holds the apply)")
        .option("--break-glass", "admins: apply without the approval a policy asks for (needs --reason; audited)");
    cmd.action(
      action(io, async (ctx, name: string, opts: FanOutOpts) => {
        const body: RequestBody<"/api/v1/assignments/{name}/apply", "post"> =
          kind === "apply" ? approvalBody(opts) : {};
        if (opts.batch !== undefined) body.batch = /^\d+$/.test(opts.batch) ? Number(opts.batch) : opts.batch;
        if (opts.maxFailures !== undefined) {
          const n = Number(opts.maxFailures);
          if (!Number.isInteger(n) || n < 0)
            throw new CliError("--max-failures must be a non-negative integer", "invalid_argument");
          body.max_failures = n;
        }
        const color = useColor(ctx);
        let run = unwrap(
          await ctx.api.POST(`/api/v1/assignments/{name}/${kind}`, { params: { path: { name } }, body }),
        );
        if (kind === "apply" && run.change_request_id) {
          const held = run.change_request_id;
          const policy = ctx.json ? undefined : await heldPolicy(ctx, held);
          ctx.out.result(run, () => ctx.out.line(heldLine(run, held, policy)));
          return;
        }
        if (!opts.wait) {
          ctx.out.result(run, () => ctx.out.line(runStartedLine(kind, run)));
          return;
        }
        ctx.out.note(runFollowingLine(kind, run));
        const followed = await followRun(ctx, run, color);
        run = followed.run;
        ctx.out.result({ ...run, results: followed.ops }, () =>
          printLines(ctx, runResultLines(kind, run, followed.ops, color)),
        );
        if (!ctx.json && (run.failures > 0 || run.status !== "completed"))
          throw new CliError(
            `${kind} of ${run.assignment} ${run.status} with ${count(run.failures, "failure")}`,
            `run_${run.status}`,
          );
      }),
    );
  };

const runs: Sub = (asg, io) =>
  asg
    .command("runs")
    .description("list an assignment's apply and plan runs, newest first")
    .argument("<name>", "assignment name (a deleted assignment's runs still list)")
    .option("--limit <n>", "page size (at most 200)")
    .option("--cursor <cursor>", "continue after a previous page's next_cursor")
    .option("--all", "fetch every page")
    .action(
      action(io, async (ctx, name: string, opts: { limit?: string; cursor?: string; all?: boolean }) => {
        const limit = parseLimit(opts.limit);
        const page = await pages(
          async (cursor) =>
            unwrap(
              await ctx.api.GET("/api/v1/assignments/{name}/runs", {
                params: { path: { name }, query: { limit, cursor } },
              }),
            ),
          "runs",
          opts,
        );
        const names = await operatorNames(ctx);
        ctx.out.result(page, () => {
          ctx.out.table(RUN_COLUMNS, runRows(page.runs, names));
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more runs: orchctl assignments runs ${name} --cursor ${page.next_cursor} (or --all)`);
        });
      }),
    );

export function register(program: Command, io: CliIO): void {
  const asg = program.command("assignments").description("assignments: modules for the agents a selector matches");
  for (const sub of [create, update, list, show, remove, fanOut("apply"), fanOut("plan"), runs]) sub(asg, io);
}
