import { matchSelector, type AgentsService, type Selector, type SelectorTarget } from "@orch/contracts";
import {
  keysetPage,
  conflict,
  inScope,
  invalid,
  isScoped,
  notFound,
  pageCursor,
  pageLimit,
  precondition,
  type Actor,
  type CachedReleaseCatalog,
  type Handlers,
  type Queryable,
  isUniqueViolation,
} from "@orch/kit";
import { agentsDb, type AgentRow } from "../db/agents.js";
import type { AgentsDeps } from "../deps.js";
import { agentRef } from "../link/presence.js";
import { INTERNAL, agentSubject } from "../link/relay.js";
import { toAgent } from "../convert.js";
import { checkName, checkSelector } from "../validate.js";

type RegistryHandlers = Pick<Handlers<typeof AgentsService>, "getAgent" | "listAgents" | "setApproval" | "removeAgent">;

const STATUSES = ["pending", "approved", "rejected"];

export const agentNotFound = (ref: string) => notFound("agent_not_found", `no agent '${ref}'`, { field: "node_id" });

/**
 * The agent if the actor may reach it. An agent outside a scoped operator's selector is reported
 * exactly like a missing one (docs/access.md), so its existence cannot be probed.
 */
export function reachable(row: AgentRow | undefined, actor: Actor, ref: string): AgentRow {
  if (!row || !inScope(actor, scopeTarget(row))) throw agentNotFound(ref);
  return row;
}

/** What a selector (the actor's scope or a request's filter) is matched against. */
const scopeTarget = (r: Pick<AgentRow, "node_id" | "name" | "tags" | "attributes">): SelectorTarget => ({
  node_id: r.node_id,
  name: r.name ?? "",
  tags: r.tags,
  attributes: r.attributes,
});

/**
 * The rows the actor may see that also match `selector` (a request's filter), or null when nothing
 * narrows the set. The scope always applies: a filter can only take agents away, never add them.
 */
export function visibleTo(
  actor: Actor,
  selector: Selector | null = null,
): ((r: Pick<AgentRow, "node_id" | "name" | "tags" | "attributes">) => boolean) | null {
  if (!isScoped(actor) && !selector) return null;
  return (r) => {
    const target = scopeTarget(r);
    return inScope(actor, target) && (!selector || matchSelector(selector, target));
  };
}

const SCAN_BATCH = 500;

/**
 * Up to `want` agents after `after` that the actor may reach and `selector` matches, in node id
 * order. A selector cannot be pushed into SQL, so a filtered page is filled by scanning batches:
 * it comes back short only when the registry has no more matches.
 */
export async function reachablePage(
  db: Queryable,
  actor: Actor,
  want: number,
  after: string,
  status: string,
  selector: Selector | null = null,
): Promise<AgentRow[]> {
  const keep = visibleTo(actor, selector);
  if (!keep) return agentsDb.page(db, { limit: want, after, status });
  const out: AgentRow[] = [];
  for (let cursor = after; ; ) {
    const rows = await agentsDb.page(db, { limit: SCAN_BATCH, after: cursor, status });
    for (const r of rows) {
      if (!keep(r)) continue;
      out.push(r);
      if (out.length >= want) return out;
    }
    if (rows.length < SCAN_BATCH) return out;
    cursor = rows[rows.length - 1]!.node_id;
  }
}

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
  await deps.nc
    .request(`${agentSubject(nodeId)}.${INTERNAL.status}`, new Uint8Array(), { timeout: 3000 })
    .catch(() => undefined);
}

/** `releases`: Agent.outdated compares with the newest published release (the service's one cached read of releases.dir). */
export function registryHandlers(deps: AgentsDeps, releases: CachedReleaseCatalog): RegistryHandlers {
  const { pool, events } = deps;
  return {
    async getAgent(req, ctx) {
      const row = reachable(await agentsDb.byRef(pool, requireRef(req.id, "id")), ctx.actor, req.id);
      return toAgent(row, (await releases.get()).latest);
    },

    async listAgents(req, ctx) {
      const limit = pageLimit(req.limit);
      if (req.status && !STATUSES.includes(req.status))
        throw invalid("invalid_status", "status must be pending, approved or rejected", { field: "status" });
      const after = pageCursor(req.cursor, "node_id");
      const selector = checkSelector(req.selector);
      const rows = await reachablePage(pool, ctx.actor, limit + 1, after, req.status, selector);
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.node_id);
      const { latest } = await releases.get();
      return { agents: page.map((r) => toAgent(r, latest)), nextCursor };
    },

    async setApproval(req, ctx) {
      requireRef(req.nodeId);
      if (req.status !== "approved" && req.status !== "rejected")
        throw invalid("invalid_status", "status must be approved or rejected", { field: "status" });
      if (req.status === "approved") checkName(req.name);
      let changed = false;
      const row = await events.tx(async (db, emit) => {
        const cur = reachable(await agentsDb.byRef(db, req.nodeId, true), ctx.actor, req.nodeId);
        let next: AgentRow;
        if (req.status === "approved") {
          // The name is given once and never changes, even across a reject and re-approve.
          if (cur.name && cur.name !== req.name)
            throw precondition("name_immutable", `agent '${cur.name}' is already named; a name never changes`, {
              field: "name",
            });
          const holder = await agentsDb.byName(db, req.name);
          if (holder && holder.node_id !== cur.node_id)
            throw conflict("name_taken", `the name '${req.name}' belongs to another agent`, { field: "name" });
          if (cur.status === "approved") return cur;
          try {
            next = await agentsDb.setStatus(db, cur.node_id, "approved", req.name);
          } catch (err) {
            if (isUniqueViolation(err))
              throw conflict("name_taken", `the name '${req.name}' belongs to another agent`, { field: "name" });
            throw err;
          }
          await emit({
            type: "agent.approved",
            summary: `agent ${req.name} approved by ${ctx.actor.name}`,
            actor: ctx.actor,
            target: agentRef(cur.node_id, req.name),
            metadata: { name: req.name, previous_status: cur.status },
          });
        } else {
          if (cur.status === "rejected") return cur;
          next = await agentsDb.setStatus(db, cur.node_id, "rejected", cur.name);
          await emit({
            type: "agent.rejected",
            summary: `agent ${cur.name || cur.node_id} rejected by ${ctx.actor.name}`,
            actor: ctx.actor,
            target: agentRef(cur.node_id, cur.name),
            metadata: { previous_status: cur.status },
          });
        }
        changed = true;
        return next;
      });
      const { latest } = await releases.get();
      if (!changed) return toAgent(row, latest);
      await notifyLink(deps, row.node_id);
      return toAgent((await agentsDb.byNodeId(pool, row.node_id)) ?? row, latest);
    },

    async removeAgent(req, ctx) {
      const removed = await events.tx(async (db, emit) => {
        const cur = reachable(await agentsDb.byRef(db, requireRef(req.id, "id"), true), ctx.actor, req.id);
        if (cur.status !== "rejected")
          throw precondition("agent_not_rejected", "only a rejected agent's record can be removed; reject it first", {
            field: "node_id",
          });
        await agentsDb.remove(db, cur.node_id);
        await emit({
          type: "agent.removed",
          summary: `rejected agent ${cur.name || cur.node_id} removed by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: agentRef(cur.node_id, cur.name),
          metadata: {},
        });
        return cur;
      });
      await notifyLink(deps, removed.node_id);
      return {};
    },
  };
}
