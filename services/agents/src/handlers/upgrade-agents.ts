import type { AgentsService } from "@orch/contracts";
import { invalid, type Actor, type CachedReleaseCatalog, type Handlers } from "@orch/kit";
import type { AgentRow } from "../db/agents.js";
import { upgradesDb, type UpgradeRow } from "../db/upgrades.js";
import type { AgentsDeps } from "../deps.js";
import { agentRef } from "../link/presence.js";
import { toAgentUpgrade } from "../upgrades/convert.js";
import { dispatchUpgrades } from "../upgrades/dispatch.js";
import { SERVER_REASONS, failUpgrade } from "../upgrades/finish.js";
import { UPGRADE_REQUEST_TIMEOUT_MS } from "../upgrades/request.js";
import { checkSelector } from "../validate.js";
import { pickVersion, upgradeTargets } from "./upgrade-targets.js";

/** How long UpgradeAgents waits for answers so fast refusals (no link, unsupported) are in its reply. */
export const REPLY_WAIT_MS = 3_000;

export interface UpgradeHandlerOptions {
  /** Tests shorten these. */
  replyWaitMs?: number;
  requestTimeoutMs?: number;
}

export function upgradeAgents(
  deps: AgentsDeps,
  catalog: CachedReleaseCatalog,
  opts: UpgradeHandlerOptions,
): Handlers<typeof AgentsService>["upgradeAgents"] {
  const { pool, events, clock, log } = deps;
  const deadlineSeconds = deps.config.releases.upgrade_deadline_seconds;
  const requestTimeoutMs = opts.requestTimeoutMs ?? UPGRADE_REQUEST_TIMEOUT_MS;
  return async (req, ctx) => {
    if (req.nodeId && req.selector)
      throw invalid("invalid_selector", "give node_id or selector, not both", { field: "selector" });
    if (!req.nodeId && !req.selector.trim())
      throw invalid("invalid_selector", "a node_id or a selector is required (`*` for every agent)", {
        field: "selector",
      });
    const selector = req.nodeId ? null : checkSelector(req.selector);
    const version = await pickVersion(catalog, req.version);
    const matched = await upgradeTargets(pool, req.nodeId, selector, ctx.actor);
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
      const row = await requestUpgrade(deps, agent, version, { now, deadlineAt, actor: ctx.actor });
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
  };
}

/** Records one agent's upgrade request, superseding the open one (if any). */
function requestUpgrade(
  deps: AgentsDeps,
  agent: AgentRow,
  version: string,
  at: { now: number; deadlineAt: number; actor: Actor },
): Promise<UpgradeRow> {
  return deps.events.tx(async (db, emit) => {
    for (const open of await upgradesDb.openFor(db, agent.node_id))
      await failUpgrade(db, emit, open, {
        reason: SERVER_REASONS.superseded,
        message: `replaced by a request for ${version}`,
        at: at.now,
      });
    const r = await upgradesDb.insert(db, {
      id: deps.ids.next(),
      node_id: agent.node_id,
      from_version: agent.version,
      to_version: version,
      requested_at: at.now,
      deadline_at: at.deadlineAt,
      requested_by: at.actor.id,
    });
    await emit({
      type: "agent.upgrade.requested",
      summary: `${at.actor.name} asked agent ${agent.name || agent.node_id} to upgrade from ${agent.version} to ${version}`,
      actor: at.actor,
      target: agentRef(agent.node_id, agent.name),
      metadata: { upgrade_id: r.id, from_version: agent.version, to_version: version, deadline_at: at.deadlineAt },
    });
    return r;
  });
}
