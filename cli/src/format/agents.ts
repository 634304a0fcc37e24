/** Agent listings, details and metrics as table rows and field pairs (pure; unit-tested). */
import type { Agent, AgentAttributes, MetricsSample } from "@orch/client";
import { bytes, duration } from "./units.js";
import { versionCell } from "./agent-upgrades.js";
import { ago } from "./time.js";

export const shortId = (nodeId: string) => nodeId.slice(0, 12);

/** The name an agent is shown by: its name, else its short id. */
export const agentLabel = (a: Pick<Agent, "name" | "node_id">) => a.name ?? shortId(a.node_id);

/**
 * The status with why a pending agent is still pending (`pending (join_token_revoked)`): its join
 * token did not approve it, and the listing is where an operator looks for that.
 */
export const statusText = (a: Pick<Agent, "status" | "pending_reason">) =>
  a.status === "pending" && a.pending_reason ? `${a.status} (${a.pending_reason})` : a.status;

/** Tags as `k=v,k2=v2` in key order; "-" when none. */
export function tagList(tags: Record<string, string>): string {
  const keys = Object.keys(tags).sort();
  return keys.length ? keys.map((k) => `${k}=${tags[k]}`).join(",") : "-";
}

export const AGENT_COLUMNS = ["NAME", "ID", "STATUS", "ONLINE", "VERSION", "TAGS", "LAST SEEN"];

export function agentRows(agents: readonly Agent[], now: number): unknown[][] {
  return agents.map((a) => [
    a.name ?? "-",
    shortId(a.node_id),
    statusText(a),
    a.connected ? "yes" : "no",
    versionCell(a),
    tagList(a.tags),
    ago(a.last_seen, now),
  ]);
}

export function agentFields(a: Agent): [string, unknown][] {
  return [
    ["name", a.name],
    ["node_id", a.node_id],
    ["status", statusText(a)],
    ["connected", a.connected ? "yes" : "no"],
    ["address", a.address],
    ["version", a.outdated ? `${a.version} (outdated)` : a.version],
    ["first_seen", a.first_seen],
    ["last_seen", a.last_seen],
    ["public_key", a.public_key],
    ["tags", tagList(a.tags)],
  ];
}

/** `orchctl agents summary`; connected + disconnected = approved (pending agents may be linked too). */
export function summaryFields(s: {
  total: number;
  connected: number;
  disconnected: number;
  pending: number;
  approved: number;
  rejected: number;
}): [string, unknown][] {
  return [
    ["total", s.total],
    ["connected", s.connected],
    ["disconnected", s.disconnected],
    ["pending", s.pending],
    ["approved", s.approved],
    ["rejected", s.rejected],
  ];
}

export const ATTRIBUTE_COLUMNS = ["ATTRIBUTE", "VALUE"];

/** Attributes in key order. */
export function attributeRows(attributes: AgentAttributes["attributes"]): unknown[][] {
  return Object.keys(attributes)
    .sort()
    .map((k) => [k, attributes[k]]);
}

export const METRIC_COLUMNS = ["TIME", "CPU%", "LOAD1", "LOAD5", "LOAD15", "MEMORY", "DISK", "RX", "TX", "UPTIME"];

export function metricRows(samples: readonly MetricsSample[]): unknown[][] {
  return samples.map((s) => [
    s.taken_at,
    s.cpu_percent.toFixed(1),
    s.load1.toFixed(2),
    s.load5.toFixed(2),
    s.load15.toFixed(2),
    `${bytes(s.memory_used)}/${bytes(s.memory_total)}`,
    `${bytes(s.disk_used)}/${bytes(s.disk_total)}`,
    bytes(s.net_rx_bytes),
    bytes(s.net_tx_bytes),
    duration(s.uptime_seconds),
  ]);
}
