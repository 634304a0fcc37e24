import type { AgentsService } from "@orch/contracts";
import { NODE_ID_RE } from "@orch/contracts";
import { keysetPage, conflict, invalid, notFound, pageLimit, precondition, type Handlers } from "@orch/kit";
import { agentsDb, type AgentRow } from "../db.js";
import type { AgentsDeps } from "../deps.js";
import { agentRef } from "../link/presence.js";
import { INTERNAL, agentSubject } from "../link/relay.js";
import { toAgent } from "../proto.js";
import { checkName } from "../validation.js";

type RegistryHandlers = Pick<Handlers<typeof AgentsService>, "getAgent" | "listAgents" | "setApproval" | "removeAgent">;

const STATUSES = ["pending", "approved", "rejected"];

export const agentNotFound = (ref: string) => notFound("agent_not_found", `no agent '${ref}'`, { field: "node_id" });

export function requireRef(ref: string, field = "node_id"): string {
  if (!ref || ref.length > 128) throw invalid("invalid_node_id", "an agent node id or name is required", { field });
  return ref;
}

/**
 * Tells the replica holding the agent's link (if any) to re-read the registry: a newly approved
 * agent gets a fresh Welcome, a rejected or removed one is refused and disconnected. Awaited, so
 * when the RPC returns the link already reflects the change.
 */
export async function notifyLink(deps: AgentsDeps, nodeId: string): Promise<void> {
  await deps.nc.request(`${agentSubject(nodeId)}.${INTERNAL.status}`, new Uint8Array(), { timeout: 3000 }).catch(() => undefined);
}

export function registryHandlers(deps: AgentsDeps): RegistryHandlers {
  const { pool, events } = deps;
  return {
    async getAgent(req) {
      const row = await agentsDb.byRef(pool, requireRef(req.id, "id"));
      if (!row) throw agentNotFound(req.id);
      return toAgent(row);
    },

    async listAgents(req) {
      const limit = pageLimit(req.limit);
      if (req.status && !STATUSES.includes(req.status)) throw invalid("invalid_status", "status must be pending, approved or rejected", { field: "status" });
      if (req.cursor && !NODE_ID_RE.test(req.cursor)) throw invalid("invalid_cursor", "cursor is not valid", { field: "cursor" });
      const rows = await agentsDb.page(pool, { limit: limit + 1, after: req.cursor, status: req.status });
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.node_id);
      return { agents: page.map(toAgent), nextCursor };
    },

    async setApproval(req, ctx) {
      requireRef(req.nodeId);
      if (req.status !== "approved" && req.status !== "rejected") throw invalid("invalid_status", "status must be approved or rejected", { field: "status" });
      if (req.status === "approved") checkName(req.name);
      let changed = false;
      const row = await events.tx(async (db, emit) => {
        const cur = await agentsDb.byRef(db, req.nodeId, true);
        if (!cur) throw agentNotFound(req.nodeId);
        let next: AgentRow;
        if (req.status === "approved") {
          // The name is given once and never changes, even across a reject and re-approve.
          if (cur.name && cur.name !== req.name) throw precondition("name_immutable", `agent ${cur.node_id} is already named '${cur.name}'`, { field: "name" });
          const holder = await agentsDb.byName(db, req.name);
          if (holder && holder.node_id !== cur.node_id) throw conflict("name_taken", `the name '${req.name}' belongs to another agent`, { field: "name" });
          if (cur.status === "approved") return cur;
          try {
            next = await agentsDb.setStatus(db, cur.node_id, "approved", req.name);
          } catch (err) {
            if ((err as { code?: string }).code === "23505") throw conflict("name_taken", `the name '${req.name}' belongs to another agent`, { field: "name" });
            throw err;
          }
          await emit({ type: "agent.approved", summary: `agent ${req.name} (${cur.node_id}) approved by ${ctx.actor.name}`, actor: ctx.actor, target: agentRef(cur.node_id, req.name), metadata: { name: req.name, previous_status: cur.status } });
        } else {
          if (cur.status === "rejected") return cur;
          next = await agentsDb.setStatus(db, cur.node_id, "rejected", cur.name);
          await emit({ type: "agent.rejected", summary: `agent ${cur.name || cur.node_id} rejected by ${ctx.actor.name}`, actor: ctx.actor, target: agentRef(cur.node_id, cur.name), metadata: { previous_status: cur.status } });
        }
        changed = true;
        return next;
      });
      if (!changed) return toAgent(row);
      await notifyLink(deps, row.node_id);
      return toAgent((await agentsDb.byNodeId(pool, row.node_id)) ?? row);
    },

    async removeAgent(req, ctx) {
      const removed = await events.tx(async (db, emit) => {
        const cur = await agentsDb.byRef(db, requireRef(req.id, "id"), true);
        if (!cur) throw agentNotFound(req.id);
        if (cur.status !== "rejected") throw precondition("agent_not_rejected", "only a rejected agent's record can be removed; reject it first", { field: "node_id" });
        await agentsDb.remove(db, cur.node_id);
        await emit({ type: "agent.removed", summary: `rejected agent ${cur.name || cur.node_id} removed by ${ctx.actor.name}`, actor: ctx.actor, target: agentRef(cur.node_id, cur.name), metadata: {} });
        return cur;
      });
      await notifyLink(deps, removed.node_id);
      return {};
    },
  };
}
