import { checkAgentVersion, type AgentsService, type Selector } from "@orch/contracts";
import {
  invalid,
  keysetPage,
  notFound,
  pageCursor,
  pageLimit,
  precondition,
  type Actor,
  type CachedReleaseCatalog,
  type Handlers,
} from "@orch/kit";
import { agentsDb, type AgentRow } from "../db/agents.js";
import { upgradesDb, type UpgradeRow } from "../db/upgrades.js";
import type { AgentsDeps } from "../deps.js";
import { agentRef } from "../link/presence.js";
import { toAgentUpgrade } from "../upgrades/convert.js";
import { dispatchUpgrades } from "../upgrades/dispatch.js";
import { SERVER_REASONS, failUpgrade } from "../upgrades/finish.js";
import { UPGRADE_REQUEST_TIMEOUT_MS } from "../upgrades/request.js";
import { checkSelector } from "../validate.js";
import { reachable, reachablePage, requireRef, visibleTo } from "./registry.js";

type UpgradeHandlers = Pick<Handlers<typeof AgentsService>, "upgradeAgents" | "listAgentUpgrades">;

/** How long UpgradeAgents waits for answers so fast refusals (no link, unsupported) are in its reply. */
export const REPLY_WAIT_MS = 3_000;
const SCAN_BATCH = 500;

export interface UpgradeHandlerOptions {
  /** Tests shorten these. */
  replyWaitMs?: number;
  requestTimeoutMs?: number;
}

/** `catalog`: the published releases (the service's one cached read of releases.dir). */
export function upgradeHandlers(
  deps: AgentsDeps,
  catalog: CachedReleaseCatalog,
  opts: UpgradeHandlerOptions = {},
): UpgradeHandlers {
  const { pool, events, clock, log } = deps;
  const deadlineSeconds = deps.config.releases.upgrade_deadline_seconds;
  const requestTimeoutMs = opts.requestTimeoutMs ?? UPGRADE_REQUEST_TIMEOUT_MS;

  /** The published version asked for (empty = the latest), or the 4xx saying why there is none. */
  async function pickVersion(asked: string): Promise<string> {
    if (asked) {
      const v = checkAgentVersion(asked);
      if (v) throw invalid(v.reason, `version ${v.message}`, { field: "version" });
    }
    const cat = await catalog.get();
    if (!cat.latest)
      throw notFound(
        "agent_packages_unavailable",
        "the server publishes no orch-agent packages (releases.dir is empty)",
      );
    if (!asked) return cat.latest;
    if (!cat.versions.has(asked))
      throw notFound("agent_version_not_found", `orch-agent ${asked} is not published on this server`, {
        field: "version",
      });
    return asked;
  }

  async function targets(nodeId: string, selector: Selector | null, actor: Actor): Promise<AgentRow[]> {
    if (nodeId) {
      const row = reachable(await agentsDb.byRef(pool, requireRef(nodeId)), actor, nodeId);
      if (row.status !== "approved")
        throw precondition("agent_not_approved", `agent ${row.name || row.node_id} is not approved`, {
          field: "node_id",
        });
      return [row];
    }
    const out: AgentRow[] = [];
    for (let after = ""; ; ) {
      const rows = await reachablePage(pool, actor, SCAN_BATCH, after, "approved", selector);
      out.push(...rows);
      if (rows.length < SCAN_BATCH) return out;
      after = rows.at(-1)!.node_id;
    }
  }

  return {
    async upgradeAgents(req, ctx) {
      if (req.nodeId && req.selector)
        throw invalid("invalid_selector", "give node_id or selector, not both", { field: "selector" });
      if (!req.nodeId && !req.selector.trim())
        throw invalid("invalid_selector", "a node_id or a selector is required (`*` for every agent)", {
          field: "selector",
        });
      const selector = req.nodeId ? null : checkSelector(req.selector);
      const version = await pickVersion(req.version);
      const matched = await targets(req.nodeId, selector, ctx.actor);
      const now = clock.now();
      // The server's deadline runs past the agent's own rollback deadline: the request may take up to
      // its timeout before the agent restarts, and the agent switches back before the server reports.
      const deadlineAt = now + requestTimeoutMs + deadlineSeconds * 1000;

      const started: UpgradeRow[] = [];
      let skipped = 0;
      for (const agent of matched) {
        if (agent.version === version) {
          skipped++;
          continue;
        }
        const row = await events.tx(async (db, emit) => {
          for (const open of await upgradesDb.openFor(db, agent.node_id))
            await failUpgrade(db, emit, open, {
              reason: SERVER_REASONS.superseded,
              message: `replaced by a request for ${version}`,
              at: now,
            });
          const r = await upgradesDb.insert(db, {
            id: deps.ids.next(),
            node_id: agent.node_id,
            from_version: agent.version,
            to_version: version,
            requested_at: now,
            deadline_at: deadlineAt,
            requested_by: ctx.actor.id,
          });
          await emit({
            type: "agent.upgrade.requested",
            summary: `${ctx.actor.name} asked agent ${agent.name || agent.node_id} to upgrade from ${agent.version} to ${version}`,
            actor: ctx.actor,
            target: agentRef(agent.node_id, agent.name),
            metadata: { upgrade_id: r.id, from_version: agent.version, to_version: version, deadline_at: deadlineAt },
          });
          return r;
        });
        started.push(row);
      }

      // Answers keep coming after the reply (an agent may take a while to download); the rows end then.
      const sent = dispatchUpgrades(
        { nc: deps.nc, events, clock, log },
        started,
        deadlineSeconds,
        requestTimeoutMs,
      ).catch((err) => log.warn({ err }, "agent upgrade dispatch failed"));
      await Promise.race([sent, new Promise((r) => setTimeout(r, opts.replyWaitMs ?? REPLY_WAIT_MS).unref())]);
      const now2 = started.length
        ? await upgradesDb.byIds(
            pool,
            started.map((r) => r.id),
          )
        : [];
      return { upgrades: now2.map(toAgentUpgrade), version, skipped };
    },

    async listAgentUpgrades(req, ctx) {
      const limit = pageLimit(req.limit);
      const before = pageCursor(req.cursor, "ulid");
      let nodeId = "";
      if (req.nodeId)
        nodeId = reachable(await agentsDb.byRef(pool, requireRef(req.nodeId)), ctx.actor, req.nodeId).node_id;
      const rows = await upgradesDb.page(pool, { limit: limit + 1, before, nodeId });
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      // A scoped operator sees only upgrades of agents in its scope (the page may come back short).
      const keep = visibleTo(ctx.actor);
      if (!keep) return { upgrades: page.map(toAgentUpgrade), nextCursor };
      const agents = new Map<string, AgentRow | undefined>();
      for (const r of page) if (!agents.has(r.node_id)) agents.set(r.node_id, await agentsDb.byNodeId(pool, r.node_id));
      const visible = page.filter((r) => {
        const a = agents.get(r.node_id);
        return a !== undefined && keep(a);
      });
      return { upgrades: visible.map(toAgentUpgrade), nextCursor };
    },
  };
}
