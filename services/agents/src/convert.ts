import { create } from "@bufbuild/protobuf";
import {
  AGENT_VERSION_RE,
  AgentSchema,
  compareVersions,
  JoinTokenSchema,
  MetricsSampleSchema,
  type Agent,
  type JoinToken,
  type MetricsSample,
} from "@orch/contracts";
import type { AgentRow } from "./db/agents.js";
import { tokenState, type JoinTokenRow } from "./db/join-tokens.js";
import type { MetricsRow } from "./db/metrics.js";

/**
 * `latest` is the newest published orch-agent release (a cached catalogue read, upgrades/catalog.ts):
 * an agent running an older version is flagged outdated.
 */
export function toAgent(r: AgentRow, latest: string | undefined): Agent {
  return create(AgentSchema, {
    nodeId: r.node_id,
    name: r.name ?? "",
    status: r.status,
    tags: r.tags,
    attributes: r.attributes,
    connected: r.connected,
    firstSeen: Number(r.first_seen),
    lastSeen: Number(r.last_seen),
    address: r.address,
    version: r.version,
    publicKey: r.public_key,
    outdated: Boolean(latest && AGENT_VERSION_RE.test(r.version) && compareVersions(r.version, latest) < 0),
    pendingReason: r.pending_reason,
  });
}

/** Never the secret hash: the record is all an operator (or the CLI) ever sees again. */
export function toJoinToken(r: JoinTokenRow, now: number): JoinToken {
  return create(JoinTokenSchema, {
    id: r.id,
    description: r.description,
    tags: r.tags,
    namePrefix: r.name_prefix,
    maxUses: r.max_uses,
    uses: r.uses,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at ?? 0,
    createdBy: r.created_by,
    createdByName: r.created_by_name,
    state: tokenState(r, now),
  });
}

export function toSample(m: MetricsRow): MetricsSample {
  return create(MetricsSampleSchema, {
    takenAt: Number(m.taken_at),
    cpuPercent: m.cpu_percent,
    load1: m.load1,
    load5: m.load5,
    load15: m.load15,
    memoryTotal: m.memory_total,
    memoryUsed: m.memory_used,
    diskTotal: m.disk_total,
    diskUsed: m.disk_used,
    netRxBytes: m.net_rx_bytes,
    netTxBytes: m.net_tx_bytes,
    uptimeSeconds: m.uptime_seconds,
  });
}
