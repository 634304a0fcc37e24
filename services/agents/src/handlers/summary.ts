import type { AgentsService } from "@orch/contracts";
import type { Handlers, Queryable } from "@orch/kit";
import { agentsDb, type AgentCounts, type AgentFacts } from "../db/agents.js";
import type { AgentsDeps } from "../deps.js";
import { checkSelector } from "../validate.js";
import { visibleTo } from "./registry.js";

type SummaryHandlers = Pick<Handlers<typeof AgentsService>, "summarizeAgents">;

// Only six short columns per row: a scan of 5,000 agents is a handful of cheap queries.
const SCAN_BATCH = 2000;

const zero = (): AgentCounts => ({ total: 0, connected: 0, disconnected: 0, pending: 0, approved: 0, rejected: 0 });

/** Adds one agent to the counts; "connected" and "disconnected" split the approved agents. */
export function countAgent(c: AgentCounts, a: Pick<AgentFacts, "status" | "connected">): AgentCounts {
  c.total++;
  if (a.status === "pending") c.pending++;
  else if (a.status === "rejected") c.rejected++;
  else if (a.status === "approved") {
    c.approved++;
    if (a.connected) c.connected++;
    else c.disconnected++;
  }
  return c;
}

/** Counts of the agents `keep` admits, scanning the registry in node id order. */
async function countMatching(db: Queryable, keep: (a: AgentFacts) => boolean): Promise<AgentCounts> {
  const counts = zero();
  for (let after = ""; ; ) {
    const rows = await agentsDb.factsPage(db, { limit: SCAN_BATCH, after });
    for (const a of rows) if (keep(a)) countAgent(counts, a);
    if (rows.length < SCAN_BATCH) return counts;
    after = rows[rows.length - 1]!.node_id;
  }
}

export function summaryHandlers(deps: AgentsDeps): SummaryHandlers {
  const { pool } = deps;
  return {
    async summarizeAgents(req, ctx) {
      const keep = visibleTo(ctx.actor, checkSelector(req.selector));
      // Unfiltered and unscoped: one aggregate query, no rows leave the database.
      return keep ? countMatching(pool, keep) : agentsDb.counts(pool);
    },
  };
}
