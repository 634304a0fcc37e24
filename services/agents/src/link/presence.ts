import type { Events, Queryable, Ref } from "@orch/kit";
import { agentsDb, type AgentRow, type LinkUp } from "../db/agents.js";

export const agentRef = (nodeId: string, name: string | null | undefined): Ref => ({
  id: nodeId,
  name: name || nodeId,
  type: "agent",
});

/**
 * The registry side of a link's life: first contact, connect, disconnect. Each change and its audit
 * event commit together.
 */
export function createPresence(events: Events, pool: Queryable) {
  return {
    /** Looks the agent up, registering it as pending on first contact. */
    async admit(up: LinkUp): Promise<AgentRow> {
      // Reconnects (the common case, thousands at once after a restart) need one read, no transaction.
      const known = await agentsDb.byNodeId(pool, up.nodeId);
      if (known) return known;
      return events.tx(async (db, emit) => {
        const existing = await agentsDb.byNodeId(db, up.nodeId);
        if (existing) return existing;
        if (await agentsDb.insertPending(db, up)) {
          await emit({
            type: "agent.registered",
            summary: `new agent ${up.nodeId} (${up.attributes.hostname ?? "unknown host"}) is pending approval`,
            actor: agentRef(up.nodeId, null),
            target: agentRef(up.nodeId, null),
            metadata: { address: up.address, version: up.version, hostname: up.attributes.hostname ?? "" },
          });
        }
        return (await agentsDb.byNodeId(db, up.nodeId))!;
      });
    },

    async connected(up: LinkUp): Promise<AgentRow | undefined> {
      return events.tx(async (db, emit) => {
        const row = await agentsDb.markConnected(db, up);
        if (!row) return undefined;
        await emit({
          type: "agent.connected",
          summary: `agent ${row.name || row.node_id} connected from ${up.address}`,
          actor: agentRef(row.node_id, row.name),
          target: agentRef(row.node_id, row.name),
          metadata: { address: up.address, replica: up.replica, version: up.version, status: row.status },
        });
        return row;
      });
    },

    /** No-op (and no event) when another session already took the agent over. */
    async disconnected(nodeId: string, session: string, now: number, reason: string): Promise<AgentRow | undefined> {
      return events.tx(async (db, emit) => {
        const row = await agentsDb.markDisconnected(db, nodeId, session, now);
        if (!row) return undefined;
        await emit({
          type: "agent.disconnected",
          // Losing an approved agent matters to operators; a pending one going away does not.
          severity: row.status === "approved" ? "warning" : "info",
          summary: `agent ${row.name || row.node_id} disconnected (${reason})`,
          actor: agentRef(row.node_id, row.name),
          target: agentRef(row.node_id, row.name),
          metadata: { reason, status: row.status },
        });
        return row;
      });
    },
  };
}

export type Presence = ReturnType<typeof createPresence>;
