import type { Emit, Queryable } from "@orch/kit";
import { upgradesDb, type UpgradeRow } from "../db/upgrades.js";
import { agentRef } from "../link/presence.js";

/** Why an upgrade failed on the server's side (the agent's own refusals pass through as they are). */
export const SERVER_REASONS = {
  /** No link to the agent, or it did not answer the Upgrade request in time. */
  unreachable: "agent_unreachable",
  /** The agent did not link up on the new version before deadline_at. */
  timeout: "timeout",
  /** A newer request for the same agent replaced this one. */
  superseded: "superseded",
} as const;

const SYSTEM = { id: "agents", name: "agents", type: "system", role: "" };

/** requested → failed, with its `agent.upgrade.failed` event; no-op when it already ended. */
export async function failUpgrade(
  db: Queryable,
  emit: Emit,
  row: UpgradeRow,
  end: { reason: string; message: string; at: number },
): Promise<UpgradeRow | undefined> {
  const done = await upgradesDb.finish(db, row.id, { status: "failed", ...end });
  if (!done) return undefined;
  await emit({
    type: "agent.upgrade.failed",
    summary: `upgrade of agent ${row.name || row.node_id} to ${row.to_version} failed: ${end.reason}`,
    actor: SYSTEM,
    target: agentRef(row.node_id, row.name),
    metadata: { upgrade_id: row.id, from_version: row.from_version, to_version: row.to_version, ...end },
  });
  return done;
}

/** requested → succeeded, with its `agent.upgrade.succeeded` event; no-op when it already ended. */
export async function succeedUpgrade(db: Queryable, emit: Emit, row: UpgradeRow, at: number) {
  const done = await upgradesDb.finish(db, row.id, { status: "succeeded", reason: "", message: "", at });
  if (!done) return undefined;
  await emit({
    type: "agent.upgrade.succeeded",
    summary: `agent ${row.name || row.node_id} upgraded from ${row.from_version} to ${row.to_version}`,
    actor: agentRef(row.node_id, row.name),
    target: agentRef(row.node_id, row.name),
    metadata: { upgrade_id: row.id, from_version: row.from_version, to_version: row.to_version },
  });
  return done;
}
