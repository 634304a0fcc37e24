/** Agent upgrades as table rows (pure; unit-tested). */
import type { ResponseBody } from "@orch/client";
import { ago } from "./time.js";

export type AgentUpgrade = ResponseBody<"/api/v1/agent-upgrades", "get">["upgrades"][number];

export const UPGRADE_COLUMNS = ["ID", "AGENT", "FROM", "TO", "STATUS", "REASON", "REQUESTED"];

export function upgradeRows(upgrades: readonly AgentUpgrade[], now: number): unknown[][] {
  return upgrades.map((u) => [
    u.id,
    u.name ?? u.node_id.slice(0, 12),
    u.from_version || "-",
    u.to_version,
    u.status,
    u.reason ?? "-",
    ago(u.requested_at, now),
  ]);
}

/** `0.1.0*` for an agent older than the newest published release (`-` when it reported none). */
export const versionCell = (a: { version: string | null; outdated?: boolean }) =>
  a.version ? `${a.version}${a.outdated ? "*" : ""}` : "-";
