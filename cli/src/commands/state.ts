/** orchctl state <agent> | ops list|show|output — and the registration of every state command group. */
import type { Command } from "commander";
import { unwrap, type QueryParams } from "@orch/client";
import { parseLimit } from "../args.js";
import { AGENT_ARG, nodeIdOrRef, resolveNodeId } from "../agent-lookup.js";
import { action } from "../context.js";
import type { CliIO } from "../output.js";
import { pages } from "../pages.js";
import {
  OPERATION_COLUMNS,
  STATE_COLUMNS,
  operationLines,
  operationRows,
  outputLines,
  stateRows,
} from "../format/operations.js";
import { register as registerApply, printLines, useColor } from "./apply.js";
import { register as registerAssignments } from "./assignments.js";
import { register as registerBlobs } from "./blobs.js";
import { register as registerModules } from "./modules.js";
import { register as registerValues } from "./values.js";

type OperationQuery = QueryParams<"/api/v1/state/operations", "get">;
const byId = (operation_id: string) => ({ params: { path: { operation_id } } });

type Sub = (parent: Command, io: CliIO) => void;

const state: Sub = (program, io) =>
  program
    .command("state")
    .description("what the orchestrator believes is on an agent (from the latest successful apply of each module)")
    .argument("<agent>", AGENT_ARG)
    .action(
      action(io, async (ctx, agent: string) => {
        const st = unwrap(
          await ctx.api.GET("/api/v1/agents/{node_id}/state", {
            params: { path: { node_id: await resolveNodeId(ctx, agent) } },
          }),
        );
        ctx.out.result(st, () => {
          if (!st.resources.length) return ctx.out.line(`nothing applied to ${agent} yet`);
          ctx.out.table(STATE_COLUMNS, stateRows(st.resources));
        });
      }),
    );

const opsList: Sub = (ops, io) =>
  ops
    .command("list", { isDefault: true })
    .description("list operations, newest first")
    .option("--agent <agent>", "only this agent (name, node id or short id)")
    .option("--kind <kind>", "apply, plan or drift")
    .option("--status <status>", "pending, running, succeeded, failed, timed_out or unreachable")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue after a previous page's next_cursor")
    .action(
      action(
        io,
        async (ctx, opts: { agent?: string; kind?: string; status?: string; limit?: string; cursor?: string }) => {
          // The server validates kind and status (invalid_request names the field).
          const query = {
            node_id: await nodeIdOrRef(ctx, opts.agent),
            kind: opts.kind,
            status: opts.status,
          } as OperationQuery;
          const limit = parseLimit(opts.limit);
          const page = await pages(
            async (cursor) =>
              unwrap(await ctx.api.GET("/api/v1/state/operations", { params: { query: { ...query, limit, cursor } } })),
            "operations",
            { cursor: opts.cursor },
          );
          ctx.out.result(page, () => {
            ctx.out.table(OPERATION_COLUMNS, operationRows(page.operations));
            if (page.has_more && page.next_cursor)
              ctx.out.note(`more operations: orchctl ops list --cursor ${page.next_cursor}`);
          });
        },
      ),
    );

const opsShow: Sub = (ops, io) =>
  ops
    .command("show")
    .description("one operation with its per-resource results and diffs")
    .argument("<operation-id>", "operation id")
    .action(
      action(io, async (ctx, id: string) => {
        const op = unwrap(await ctx.api.GET("/api/v1/state/operations/{operation_id}", byId(id)));
        const color = useColor(ctx);
        ctx.out.result(op, () => printLines(ctx, operationLines(op, color)));
      }),
    );

const opsOutput: Sub = (ops, io) =>
  ops
    .command("output")
    .description("captured stdout/stderr of an operation's exec resources")
    .argument("<operation-id>", "operation id")
    .action(
      action(io, async (ctx, id: string) => {
        const op = unwrap(await ctx.api.GET("/api/v1/state/operations/{operation_id}", byId(id)));
        const out = unwrap(
          await ctx.api.GET("/api/v1/agents/{node_id}/state/operations/{operation_id}/output", {
            params: { path: { node_id: op.node_id, operation_id: id } },
          }),
        );
        ctx.out.result(out, () => printLines(ctx, outputLines(out.outputs)));
      }),
    );

/** Every state command group: modules, assignments, values, apply/plan/drift, state, ops. */
export function register(program: Command, io: CliIO): void {
  registerModules(program, io);
  registerBlobs(program, io);
  registerAssignments(program, io);
  registerValues(program, io);
  registerApply(program, io);
  state(program, io);
  const ops = program.command("ops").description("state operations (apply, plan, drift)");
  for (const sub of [opsList, opsShow, opsOutput]) sub(ops, io);
}
