import { z } from "zod";
import type { AgentUpgrade } from "@orch/contracts";
import { iso } from "../schemas.js";

export const AgentUpgradeOut = z.object({
  id: z.string(),
  node_id: z.string(),
  name: z.string().nullable(),
  from_version: z.string(),
  to_version: z.string(),
  status: z.enum(["requested", "succeeded", "failed"]),
  reason: z
    .string()
    .nullable()
    .describe(
      "why it failed: timeout, agent_unreachable, superseded, or the agent's refusal (upgrade_unsupported, download_failed, signature_invalid, checksum_mismatch, package_invalid, already_current, upgrade_in_progress)",
    ),
  message: z.string().nullable(),
  requested_at: z.string(),
  deadline_at: z.string().describe("reported failed (timeout) if the agent is not back on to_version by then"),
  finished_at: z.string().nullable(),
  requested_by: z.string(),
});

export const upgradeJson = (u: AgentUpgrade): z.infer<typeof AgentUpgradeOut> => ({
  id: u.id,
  node_id: u.nodeId,
  name: u.name || null,
  from_version: u.fromVersion,
  to_version: u.toVersion,
  status: u.status as "requested" | "succeeded" | "failed",
  reason: u.reason || null,
  message: u.message || null,
  requested_at: iso(u.requestedAt),
  deadline_at: iso(u.deadlineAt),
  finished_at: u.finishedAt ? iso(u.finishedAt) : null,
  requested_by: u.requestedBy,
});

export const Started = z.object({
  upgrades: z.array(AgentUpgradeOut),
  version: z.string(),
  skipped: z.number().int().describe("matched agents already running the version"),
});

export const startedJson = (r: { upgrades: AgentUpgrade[]; version: string; skipped: number }) => ({
  upgrades: r.upgrades.map(upgradeJson),
  version: r.version,
  skipped: r.skipped,
});
