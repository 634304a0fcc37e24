import type { StateService } from "@orch/contracts";
import { keysetPage, notFound, pageCursor, type Handlers } from "@orch/kit";
import { operationMsg } from "../convert.js";
import { gateAgentApply } from "../approvals/agent-apply.js";
import { operationsDb } from "../db/operations.js";
import type { Engine } from "../engine/index.js";
import { loadSources } from "../engine/modules.js";
import { approvedAgent, nodeIdForRead, reachableNodeIds, requireReachable } from "./agents.js";
import { valuesFor } from "../values/load.js";
import { checkModuleList, checkOperationFilter, kindOf, operationsPageLimit, waitMs } from "../validate.js";

type OperationHandlers = Pick<
  Handlers<typeof StateService>,
  "runAgent" | "listOperations" | "getOperation" | "getOperationOutput"
>;

export function operationHandlers(engine: Engine): OperationHandlers {
  const { deps, clients, runner, cache } = engine;
  const { pool } = deps;

  async function load(id: string, nodeRef: string, actor: Parameters<typeof nodeIdForRead>[2]) {
    const op = await operationsDb.get(pool, id);
    if (!op) throw notFound("operation_not_found", `no operation '${id}'`);
    if (nodeRef && op.node_id !== nodeRef && op.node_id !== (await nodeIdForRead(clients, nodeRef, actor))) {
      throw notFound("operation_not_found", `no operation '${id}' on agent '${nodeRef}'`);
    }
    await requireReachable(clients, op.node_id, actor, () => notFound("operation_not_found", `no operation '${id}'`));
    return op;
  }

  return {
    async runAgent(req, ctx) {
      const kind = kindOf(req.kind);
      const wait = waitMs(req.waitSeconds);
      const modules = checkModuleList(req.modules);
      const sources = await loadSources(pool, cache, modules);
      const [agent] = await valuesFor(pool, sources, [await approvedAgent(clients, req.nodeId, ctx.actor)]);
      if (kind === "apply") {
        const gate = await gateAgentApply(engine, {
          agent: agent!,
          sources,
          actor: ctx.actor,
          reason: req.reason,
          breakGlass: req.breakGlass,
        });
        if (gate.kind === "held") {
          const plan = (await runner.waitFor(gate.planOperationId, wait))!;
          return { ...operationMsg(plan, true), changeRequestId: gate.changeRequestId };
        }
      }
      const { op } = await runner.start({ agent: agent!, kind, sources, actor: ctx.actor });
      return operationMsg((await runner.waitFor(op.id, wait)) ?? op, true);
    },

    async listOperations(req, ctx) {
      const limit = operationsPageLimit(req.limit, req.withResults);
      const cursor = pageCursor(req.cursor, "ulid");
      const runId = checkOperationFilter(req);
      const nodeId = await nodeIdForRead(clients, req.nodeId, ctx.actor);
      // Across agents, a scoped operator sees only operations on agents it can reach.
      const nodeIds = nodeId ? undefined : await reachableNodeIds(clients, ctx.actor);
      const filter = {
        node_id: nodeId,
        kind: req.kind,
        status: req.status,
        run_id: runId,
        ...(nodeIds ? { node_ids: nodeIds } : {}),
      };
      const rows = await operationsDb.page(pool, filter, limit + 1, cursor, req.withResults);
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      return { operations: page.map((o) => operationMsg(o, req.withResults)), nextCursor };
    },

    async getOperation(req, ctx) {
      return operationMsg(await load(req.id, req.nodeId, ctx.actor), true);
    },

    async getOperationOutput(req, ctx) {
      const op = await load(req.id, req.nodeId, ctx.actor);
      return { operationId: op.id, nodeId: op.node_id, outputs: op.output };
    },
  };
}
