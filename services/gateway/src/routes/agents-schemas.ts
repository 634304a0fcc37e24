import { isIP } from "node:net";
import { z } from "zod";
import type { Agent, MetricsSample } from "@orch/contracts";
import { invalid } from "@orch/kit";
import { iso } from "../schemas.js";

/**
 * The agents service's rules (issue 4 §4), checked here too so bad input never reaches the bus.
 * The codes and `field` match what the service answers, so a client sees one contract.
 */
export const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const TAG_KEY_RE = /^[a-z0-9]([a-z0-9._/-]{0,62})$/;
export const TAG_VALUE_MAX = 255;
export const MAX_TAGS = 64;
const NODE_ID_RE = /^[0-9a-f]{32}$/;
/** Printable: no control characters (C0, DEL, C1). */
const PRINTABLE_RE = /^[^\p{Cc}]*$/u;

export const NAME_RULE =
  "must be a DNS label: 1-63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit";
export const KEY_RULE = "must be 1-63 characters of a-z, 0-9, '.', '_', '/' and '-', starting with a letter or digit";
export const VALUE_RULE = `must be at most ${TAG_VALUE_MAX} printable characters`;

/** A 400 naming the field, with the same `errors` list the gateway's schema failures carry. */
export function fieldError(
  location: "body" | "path" | "query",
  field: string,
  message: string,
  reason = "invalid_request",
) {
  return invalid(reason, `${location} field '${field}' ${message}`, { field, errors: [{ location, field, message }] });
}

export function checkName(name: string | null | undefined): string {
  if (!name) throw fieldError("body", "name", "is required when approving", "name_required");
  if (!NAME_RE.test(name)) throw fieldError("body", "name", NAME_RULE, "invalid_name");
  return name;
}

export function checkTagKey(key: string, location: "body" | "path", field: string): void {
  if (!TAG_KEY_RE.test(key)) throw fieldError(location, field, `(tag key) ${KEY_RULE}`, "invalid_tag_key");
}

export function checkTagValue(value: string, field: string): void {
  if ([...value].length > TAG_VALUE_MAX || !PRINTABLE_RE.test(value))
    throw fieldError("body", field, `(tag value) ${VALUE_RULE}`, "invalid_tag_value");
}

export function checkTags(tags: Record<string, string>): void {
  const keys = Object.keys(tags);
  if (keys.length > MAX_TAGS) throw fieldError("body", "tags", `holds at most ${MAX_TAGS} tags`, "too_many_tags");
  for (const k of keys) {
    checkTagKey(k, "body", `tags.${k}`);
    checkTagValue(tags[k]!, `tags.${k}`);
  }
}

/** Path reference to an agent: its 32-hex node id or its approved name (the service resolves both). */
export const AgentRef = z.string().max(63).regex(NAME_RE, "must be a 32-hex node id or an agent name");
export const AgentParams = z.object({ node_id: AgentRef });

export const AgentStatus = z.enum(["pending", "approved", "rejected"]);

/** host:port with a hostname, IPv4 address or [IPv6] address and a port 1..65535. */
export function validTarget(t: string): boolean {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(t);
  if (!m) return false;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return false;
  if (m[1] !== undefined) return isIP(m[1]) === 6;
  const host = m[2]!;
  if (/^[\d.]+$/.test(host)) return isIP(host) === 4;
  return (
    host.length <= 253 &&
    /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(host)
  );
}
export const TARGET_RULE = "must be host:port (hostname, IPv4 or [IPv6] address, port 1-65535)";

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
  public_key: z.string().describe("hex Ed25519 public key; node_id is derived from it"),
});

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
    public_key: a.publicKey,
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

export const isNodeId = (ref: string) => NODE_ID_RE.test(ref);
