/** orchctl state <agent> | ops list|show|output — and the registration of every state command group. */
import type { Command } from "commander";
import { action } from "../context.js";
import type { CliIO } from "../output.js";
import { register as registerApply, operationHeadline, printResults, useColor, type Operation } from "./apply.js";
import { register as registerAssignments } from "./assignments.js";
import { register as registerModules, pages, parseLimit } from "./modules.js";

interface OperationPage {
  operations: Operation[];
  has_more: boolean;
  next_cursor: string | null;
}

interface Believed {
  node_id: string;
  resources: Array<{
    module: string;
    id: string;
    type: string;
    status: string;
    observed: Record<string, unknown>;
    operation_id: string;
    applied_at: string;
  }>;
}

interface Output {
  operation_id: string;
  node_id: string;
  outputs: Array<{ id: string; module: string; stdout: string; stderr: string }>;
}

function registerState(program: Command, io: CliIO): void {
  program
    .command("state")
    .description("what the orchestrator believes is on an agent (from the latest successful apply of each module)")
    .argument("<agent>", "node id or agent name")
    .action(
      action(io, async (ctx, agent: string) => {
        const st = await ctx.api<Believed>("GET", `/agents/${encodeURIComponent(agent)}/state`, undefined, {
          auth: true,
        });
        ctx.out.result(st, () => {
          if (!st.resources.length) return ctx.out.line(`nothing applied to ${agent} yet`);
          ctx.out.table(
            ["MODULE", "RESOURCE", "TYPE", "STATUS", "OPERATION", "APPLIED"],
            st.resources.map((r) => [r.module, r.id, r.type, r.status, r.operation_id, r.applied_at]),
          );
        });
      }),
    );

  const ops = program.command("ops").description("state operations (apply, plan, drift)");
  ops
    .command("list", { isDefault: true })
    .description("list operations, newest first")
    .option("--agent <agent>", "only this agent (node id or name)")
    .option("--kind <kind>", "apply, plan or drift")
    .option("--status <status>", "pending, running, succeeded, failed, timed_out or unreachable")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue after a previous page's next_cursor")
    .action(
      action(
        io,
        async (ctx, opts: { agent?: string; kind?: string; status?: string; limit?: string; cursor?: string }) => {
          const page = await pages<Operation, OperationPage>(ctx, "/state/operations", "operations", {
            limit: parseLimit(opts.limit),
            cursor: opts.cursor,
            query: { node_id: opts.agent, kind: opts.kind, status: opts.status },
          });
          ctx.out.result(page, () => {
            ctx.out.table(
              ["ID", "AGENT", "KIND", "STATUS", "MODULES", "CREATED", "SUMMARY"],
              page.operations.map((o) => [
                o.id,
                o.node_name || o.node_id,
                o.kind,
                o.status,
                o.modules.join(","),
                o.created_at,
                o.error_code ?? `${o.summary.changed} changed, ${o.summary.failed} failed`,
              ]),
            );
            if (page.has_more && page.next_cursor)
              ctx.out.note(`more operations: orchctl ops list --cursor ${page.next_cursor}`);
          });
        },
      ),
    );
  ops
    .command("show")
    .description("one operation with its per-resource results and diffs")
    .argument("<operation-id>", "operation id")
    .action(
      action(io, async (ctx, id: string) => {
        const op = await ctx.api<Operation>("GET", `/state/operations/${encodeURIComponent(id)}`, undefined, {
          auth: true,
        });
        const color = useColor(ctx);
        ctx.out.result(op, () => {
          ctx.out.line(operationHeadline(op, color));
          printResults(ctx, op, color);
        });
      }),
    );
  ops
    .command("output")
    .description("captured stdout/stderr of an operation's exec resources")
    .argument("<operation-id>", "operation id")
    .action(
      action(io, async (ctx, id: string) => {
        const op = await ctx.api<Operation>("GET", `/state/operations/${encodeURIComponent(id)}`, undefined, {
          auth: true,
        });
        const out = await ctx.api<Output>(
          "GET",
          `/agents/${op.node_id}/state/operations/${encodeURIComponent(id)}/output`,
          undefined,
          { auth: true },
        );
        ctx.out.result(out, () => {
          if (!out.outputs.length) return ctx.out.line("no captured output");
          for (const o of out.outputs) {
            ctx.out.line(`== ${o.module}/${o.id} stdout`);
            if (o.stdout) ctx.out.line(o.stdout.replace(/\n$/, ""));
            if (o.stderr) {
              ctx.out.line(`== ${o.module}/${o.id} stderr`);
              ctx.out.line(o.stderr.replace(/\n$/, ""));
            }
          }
        });
      }),
    );
}

/** Every state command group: modules, assignments, apply/plan/drift, state, ops. */
export function register(program: Command, io: CliIO): void {
  registerModules(program, io);
  registerAssignments(program, io);
  registerApply(program, io);
  registerState(program, io);
}
