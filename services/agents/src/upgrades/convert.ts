import { create } from "@bufbuild/protobuf";
import { AgentUpgradeSchema, type AgentUpgrade } from "@orch/contracts";
import type { UpgradeRow } from "../db/upgrades.js";

export const toAgentUpgrade = (r: UpgradeRow): AgentUpgrade =>
  create(AgentUpgradeSchema, {
    id: r.id,
    nodeId: r.node_id,
    name: r.name,
    fromVersion: r.from_version,
    toVersion: r.to_version,
    status: r.status,
    reason: r.reason,
    message: r.message,
    requestedAt: Number(r.requested_at),
    deadlineAt: Number(r.deadline_at),
    finishedAt: Number(r.finished_at ?? 0),
    requestedBy: r.requested_by,
  });
