import type { AgentsService } from "@orch/contracts";
import { invalid, notFound, type Actor, type Handlers } from "@orch/kit";
import { agentsDb } from "../db/agents.js";
import { metricsDb } from "../db/metrics.js";
import type { AgentsDeps } from "../deps.js";
import { toSample } from "../convert.js";
import { reachable, requireRef } from "./registry.js";

type MetricsHandlers = Pick<Handlers<typeof AgentsService>, "getMetrics" | "getLatestMetrics">;

export const METRICS_DEFAULT_LIMIT = 100;
export const METRICS_MAX_LIMIT = 1000;

const validTime = (v: number) => Number.isFinite(v) && v >= 0 && v <= 8.64e15;

export function metricsHandlers(deps: AgentsDeps): MetricsHandlers {
  const { pool } = deps;
  const resolve = async (ref: string, actor: Actor) =>
    reachable(await agentsDb.byRef(pool, requireRef(ref)), actor, ref);
  return {
    async getMetrics(req, ctx) {
      const limit = req.limit === 0 ? METRICS_DEFAULT_LIMIT : req.limit;
      if (!Number.isInteger(limit) || limit < 1 || limit > METRICS_MAX_LIMIT)
        throw invalid("invalid_limit", `limit must be between 1 and ${METRICS_MAX_LIMIT}`, { field: "limit" });
      if (!validTime(req.since)) throw invalid("invalid_since", "since must be a time (Unix ms)", { field: "since" });
      if (!validTime(req.until)) throw invalid("invalid_until", "until must be a time (Unix ms)", { field: "until" });
      if (req.until && req.since >= req.until)
        throw invalid("invalid_range", "since must be before until", { field: "since" });
      const agent = await resolve(req.nodeId, ctx.actor);
      const rows = await metricsDb.history(pool, agent.node_id, {
        since: Math.floor(req.since),
        until: Math.ceil(req.until),
        limit,
      });
      return { samples: rows.map(toSample) };
    },
    async getLatestMetrics(req, ctx) {
      const agent = await resolve(req.id, ctx.actor);
      const row = await metricsDb.latest(pool, agent.node_id);
      if (!row) throw notFound("no_metrics", `agent ${agent.name || agent.node_id} has not reported metrics yet`);
      return { nodeId: agent.node_id, sample: toSample(row) };
    },
  };
}
