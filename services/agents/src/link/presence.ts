import { timingSafeEqual } from "node:crypto";
import { joinedAgentName, parseJoinToken, UNNOTIFIED_FLAG, type JoinPendingReason } from "@orch/contracts";
import type { Emit, Events, Queryable, Ref } from "@orch/kit";
import { agentsDb, type AgentRow, type LinkUp } from "../db/agents.js";
import { joinTokensDb, type JoinTokenRow } from "../db/join-tokens.js";
import { hashSecret, joinTokenRef, tokenLabel } from "../handlers/join-tokens.js";

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
    /**
     * Looks the agent up, registering it as pending on first contact. A new or still-pending agent
     * that presents a join token is approved by it when the token holds, else stays pending with
     * the reason recorded (never rejected: an operator can still approve it by hand).
     */
    async admit(up: LinkUp): Promise<AgentRow> {
      // Reconnects (the common case, thousands at once after a restart) need one read, no transaction.
      const known = await agentsDb.byNodeId(pool, up.nodeId);
      if (known && !(known.status === "pending" && up.joinToken)) return known;
      return events.tx(async (db, emit) => {
        const existing = await agentsDb.byNodeId(db, up.nodeId, true);
        if (existing) {
          if (existing.status !== "pending" || !up.joinToken) return existing;
          const verdict = await judgeToken(db, up.joinToken, up.now);
          if (verdict.ok) return approveJoined(db, emit, existing, verdict.token);
          // Still pending: keep the reason current, but a reconnecting agent emits no new events.
          if (existing.pending_reason === verdict.reason) return existing;
          return agentsDb.setPendingReason(db, up.nodeId, verdict.reason);
        }
        const verdict = up.joinToken ? await judgeToken(db, up.joinToken, up.now) : undefined;
        const pendingReason = verdict && !verdict.ok ? verdict.reason : "";
        if (await agentsDb.insertPending(db, up, pendingReason)) {
          const host = up.attributes.hostname ?? "unknown host";
          await emit({
            type: "agent.registered",
            summary: verdict?.ok
              ? `new agent ${up.nodeId} (${host}) presented join token ${verdict.token.id}`
              : `new agent ${up.nodeId} (${host}) is pending approval${pendingReason ? ` (${pendingReason})` : ""}`,
            actor: agentRef(up.nodeId, null),
            target: agentRef(up.nodeId, null),
            metadata: {
              address: up.address,
              version: up.version,
              hostname: up.attributes.hostname ?? "",
              ...(pendingReason ? { pending_reason: pendingReason } : {}),
            },
          });
          const row = (await agentsDb.byNodeId(db, up.nodeId))!;
          return verdict?.ok ? approveJoined(db, emit, row, verdict.token) : row;
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

    /**
     * No-op (and no event) when another session already took the agent over. `planned`: the link
     * ended on purpose while the agent runs on (this replica stopping): recorded, but at info and
     * flagged so that notify sends it nowhere — a restart of the service is not an incident.
     */
    async disconnected(
      nodeId: string,
      session: string,
      now: number,
      reason: string,
      planned = false,
    ): Promise<AgentRow | undefined> {
      return events.tx(async (db, emit) => {
        const row = await agentsDb.markDisconnected(db, nodeId, session, now);
        if (!row) return undefined;
        await emit({
          type: "agent.disconnected",
          // Losing an approved agent matters to operators; a pending one going away does not.
          severity: row.status === "approved" && !planned ? "warning" : "info",
          summary: `agent ${row.name || row.node_id} disconnected (${reason})`,
          actor: agentRef(row.node_id, row.name),
          target: agentRef(row.node_id, row.name),
          metadata: { reason, status: row.status, ...(planned ? { [UNNOTIFIED_FLAG]: true } : {}) },
        });
        return row;
      });
    },
  };
}

export type Presence = ReturnType<typeof createPresence>;

type Verdict = { ok: true; token: JoinTokenRow } | { ok: false; reason: JoinPendingReason };

/**
 * Whether `presented` may approve an agent now. Locks the token row, so concurrent joins through
 * one token count their uses one at a time and max_uses holds.
 */
async function judgeToken(db: Queryable, presented: string, now: number): Promise<Verdict> {
  const parsed = parseJoinToken(presented);
  if (!parsed) return { ok: false, reason: "join_token_invalid" };
  const token = await joinTokensDb.byId(db, parsed.id, true);
  // Constant-time compare of the hashes: the id is public-ish (events, lists), the secret is not.
  if (!token || !timingSafeEqual(hashSecret(parsed.secret), token.secret_hash))
    return { ok: false, reason: "join_token_invalid" };
  if (token.revoked_at !== null) return { ok: false, reason: "join_token_revoked" };
  if (now >= token.expires_at) return { ok: false, reason: "join_token_expired" };
  if (token.max_uses > 0 && token.uses >= token.max_uses) return { ok: false, reason: "join_token_exhausted" };
  return { ok: true, token };
}

const NAME_BATCH = 20;

/** `<prefix>-<hostname>`, or the first of `-2`, `-3`… no agent holds yet. */
async function freeName(db: Queryable, prefix: string, hostname: string): Promise<string> {
  for (let first = 1; ; first += NAME_BATCH) {
    const names = Array.from({ length: NAME_BATCH }, (_, i) => joinedAgentName(prefix, hostname, first + i));
    const taken = await agentsDb.takenNames(db, names);
    const free = names.find((n) => !taken.has(n));
    if (free) return free;
  }
}

async function approveJoined(db: Queryable, emit: Emit, agent: AgentRow, token: JoinTokenRow): Promise<AgentRow> {
  const name = await freeName(db, token.name_prefix, agent.attributes.hostname ?? "");
  const row = await agentsDb.approveJoined(db, agent.node_id, { name, tags: token.tags, tokenId: token.id });
  await joinTokensDb.incrementUses(db, token.id);
  await emit({
    type: "agent.approved",
    summary: `agent ${name} approved by join token ${tokenLabel(token)}`,
    actor: joinTokenRef(token),
    target: agentRef(agent.node_id, name),
    metadata: { name, previous_status: agent.status, join_token_id: token.id, tags: token.tags },
  });
  return row;
}
