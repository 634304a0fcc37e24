import type { StateService } from "@orch/contracts";
import { keysetPage, notFound, pageCursor, pageLimit, type Handlers } from "@orch/kit";
import { believedMsg, driftMsg, operationMsg } from "../convert.js";
import { believedDb, driftDb } from "../db/snapshots.js";
import { requireSnapshot } from "../engine/drift.js";
import type { Engine } from "../engine/index.js";
import { approvedAgent, nodeIdForRead, requireReachable } from "./agents.js";
import { waitMs } from "../validate.js";

type DriftHandlers = Pick<
  Handlers<typeof StateService>,
  "checkDrift" | "listDrift" | "getLatestDrift" | "getDrift" | "getBelievedState"
>;

export function driftHandlers(engine: Engine): DriftHandlers {
  const { deps, clients, runner, cache } = engine;
  const { pool } = deps;

  return {
    async checkDrift(req, ctx) {
      const wait = waitMs(req.waitSeconds);
      const agent = await approvedAgent(clients, req.nodeId, ctx.actor);
      const sources = await requireSnapshot(deps, cache, agent);
      const { op } = await runner.start({ agent, kind: "drift", sources, actor: ctx.actor });
      const now = (await runner.waitFor(op.id, wait)) ?? op;
      const drift =
        now.status === "pending" || now.status === "running" ? undefined : await driftDb.byOperation(pool, op.id);
      return { operation: operationMsg(now, true), ...(drift ? { drift: driftMsg(drift) } : {}) };
    },

    async listDrift(req, ctx) {
      const limit = pageLimit(req.limit);
      const cursor = pageCursor(req.cursor, "ulid");
      const nodeId = await nodeIdForRead(clients, req.nodeId, ctx.actor);
      const rows = await driftDb.page(pool, nodeId, limit + 1, cursor);
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      return { records: page.map(driftMsg), nextCursor };
    },

    async getLatestDrift(req, ctx) {
      const nodeId = await nodeIdForRead(clients, req.nodeId, ctx.actor);
      const row = await driftDb.latest(pool, nodeId);
      if (!row) throw notFound("drift_not_found", `no drift record for agent '${req.nodeId}'`);
      return driftMsg(row);
    },

    async getDrift(req, ctx) {
      const missing = () => notFound("drift_not_found", `no drift record '${req.id}'`);
      const row = await driftDb.get(pool, req.id);
      if (!row) throw missing();
      await requireReachable(clients, row.node_id, ctx.actor, missing);
      return driftMsg(row);
    },

    async getBelievedState(req, ctx) {
      const nodeId = await nodeIdForRead(clients, req.nodeId, ctx.actor);
      return { nodeId, resources: (await believedDb.ofNode(pool, nodeId)).map(believedMsg) };
    },
  };
}
