/** Audit events as table rows and stream lines, and the retention setting (pure). */
import type { AuditEvent, AuditRetention } from "@orch/client";
import { count } from "./units.js";

/** `type:name`, falling back to the id when there is no name; no prefix when the type is empty. */
const ref = (r: { name: string; id: string; type: string }) =>
  r.type ? `${r.type}:${r.name || r.id}` : r.name || r.id;

export const AUDIT_COLUMNS = ["TIME", "TYPE", "SEVERITY", "ACTOR", "TARGET", "SUMMARY", "ID"] as const;

export const auditRow = (e: AuditEvent) => [
  e.timestamp,
  e.event_type,
  e.severity,
  ref(e.actor),
  ref(e.target),
  e.summary,
  e.id,
];

/**
 * While following, events arrive one at a time, so columns cannot be aligned: the header and each
 * event are single lines with two spaces between cells.
 */
export const auditStreamHeader = () => `${AUDIT_COLUMNS.join("  ")}\n`;
export const auditStreamLine = (e: AuditEvent) => `${auditRow(e).join("  ")}\n`;

export const prunedLine = (deleted: number, before: string) =>
  `Deleted ${count(deleted, "audit event")} before ${before}`;

export function retentionFields(r: AuditRetention): [string, unknown][] {
  return [
    ["retention_days", r.retention_days === null ? "off (events are kept forever)" : r.retention_days],
    [
      "source",
      r.source === "override" ? "override (set with orchctl audit retention set)" : "config (audit.retention_days)",
    ],
    ["default_retention_days", r.default_retention_days ?? "off"],
  ];
}
