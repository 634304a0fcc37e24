import { z } from "zod";
import type { Agent, AgentSummary, MetricsSample } from "@orch/contracts";
import { iso } from "../schemas.js";
import { AgentStatus } from "./agents-schemas.js";

/** The one place an agent, its status counts and its metrics samples become JSON. */

export const AgentOut = z.object({
  node_id: z.string(),
  name: z.string().nullable().describe("immutable name given at approval; null while pending"),
  status: AgentStatus,
  tags: z.record(z.string(), z.string()),
  attributes: z.record(z.string(), z.string()),
  connected: z.boolean(),
  first_seen: z.string().nullable(),
  last_seen: z.string().nullable(),
  address: z.string().nullable(),
  version: z.string().nullable(),
  outdated: z.boolean().describe("the agent runs a version older than the newest published release"),
  public_key: z.string().describe("hex Ed25519 public key; node_id is derived from it"),
  pending_reason: z
    .string()
    .nullable()
    .describe(
      "why a pending agent's join token did not approve it (join_token_invalid, join_token_expired, join_token_exhausted, join_token_revoked); null otherwise",
    ),
});

export const AgentSummaryOut = z.object({
  total: z.number().int().min(0).describe("agents the caller can see that match"),
  connected: z.number().int().min(0).describe("approved and connected now"),
  disconnected: z.number().int().min(0).describe("approved and not connected"),
  pending: z.number().int().min(0),
  approved: z.number().int().min(0),
  rejected: z.number().int().min(0),
});

export function summaryJson(s: AgentSummary): z.infer<typeof AgentSummaryOut> {
  return {
    total: s.total,
    connected: s.connected,
    disconnected: s.disconnected,
    pending: s.pending,
    approved: s.approved,
    rejected: s.rejected,
  };
}

export const SampleOut = z.object({
  taken_at: z.string(),
  cpu_percent: z.number(),
  load1: z.number(),
  load5: z.number(),
  load15: z.number(),
  memory_total: z.number(),
  memory_used: z.number(),
  disk_total: z.number(),
  disk_used: z.number(),
  net_rx_bytes: z.number(),
  net_tx_bytes: z.number(),
  uptime_seconds: z.number(),
});

const time = (ms: number) => (ms > 0 ? iso(ms) : null);

export function agentJson(a: Agent): z.infer<typeof AgentOut> {
  return {
    node_id: a.nodeId,
    name: a.name || null,
    status: AgentStatus.safeParse(a.status).data ?? "pending",
    tags: { ...a.tags },
    attributes: { ...a.attributes },
    connected: a.connected,
    first_seen: time(a.firstSeen),
    last_seen: time(a.lastSeen),
    address: a.address || null,
    version: a.version || null,
    outdated: a.outdated,
    public_key: a.publicKey,
    pending_reason: a.pendingReason || null,
  };
}

export function sampleJson(s: MetricsSample): z.infer<typeof SampleOut> {
  return {
    taken_at: iso(s.takenAt),
    cpu_percent: s.cpuPercent,
    load1: s.load1,
    load5: s.load5,
    load15: s.load15,
    memory_total: s.memoryTotal,
    memory_used: s.memoryUsed,
    disk_total: s.diskTotal,
    disk_used: s.diskUsed,
    net_rx_bytes: s.netRxBytes,
    net_tx_bytes: s.netTxBytes,
    uptime_seconds: s.uptimeSeconds,
  };
}
