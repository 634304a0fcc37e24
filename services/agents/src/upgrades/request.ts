import { AgentUpgradeService } from "@orch/contracts";
import { OrchError, rpcClient, type NatsConnection } from "@orch/kit";
import { agentSubject } from "../link/relay.js";
import { SERVER_REASONS } from "./finish.js";

/** Downloading, verifying and unpacking a release takes a while on a slow machine. */
export const UPGRADE_REQUEST_TIMEOUT_MS = 60_000;

export type UpgradeAnswer = { accepted: true } | { accepted: false; reason: string; message: string };

/**
 * Asks one agent (through the relay, `orch.agent.<node_id>.Upgrade`) to install a version. Never
 * throws: no link, no answer and errors become refusals with a stable reason.
 */
export async function requestUpgrade(
  nc: NatsConnection,
  target: { nodeId: string; upgradeId: string; version: string; deadlineSeconds: number },
  timeoutMs = UPGRADE_REQUEST_TIMEOUT_MS,
): Promise<UpgradeAnswer> {
  const client = rpcClient(nc, "", AgentUpgradeService, { timeoutMs, subjectBase: agentSubject(target.nodeId) });
  try {
    const reply = await client.upgrade({
      upgradeId: target.upgradeId,
      version: target.version,
      deadlineSeconds: target.deadlineSeconds,
    });
    if (reply.accepted) return { accepted: true };
    return { accepted: false, reason: reply.reason || "upgrade_refused", message: reply.message };
  } catch (err) {
    const e = OrchError.from(err);
    if (e.code === "UNAVAILABLE")
      return { accepted: false, reason: SERVER_REASONS.unreachable, message: "the agent is not connected" };
    if (e.code === "DEADLINE_EXCEEDED")
      return { accepted: false, reason: SERVER_REASONS.unreachable, message: "the agent did not answer in time" };
    // An agent built before upgrades existed does not serve the method.
    if (e.reason === "unknown_method")
      return { accepted: false, reason: "upgrade_unsupported", message: "this agent version cannot upgrade itself" };
    return { accepted: false, reason: e.reason || "upgrade_refused", message: e.message };
  }
}
