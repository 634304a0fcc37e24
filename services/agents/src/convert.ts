import { create } from "@bufbuild/protobuf";
import { AgentSchema, MetricsSampleSchema, type Agent, type MetricsSample } from "@orch/contracts";
import type { AgentRow } from "./db/agents.js";
import type { MetricsRow } from "./db/metrics.js";

export function toAgent(r: AgentRow): Agent {
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
