import t from "tap";
import type { AuditEvent, AuditRetention } from "@orch/client";
import {
  AUDIT_COLUMNS,
  auditRow,
  auditStreamHeader,
  auditStreamLine,
  prunedLine,
  retentionFields,
} from "../src/format/audit.js";
import { formatTable } from "../src/output.js";

const approved = {
  id: "01J0000000000000000000000A",
  timestamp: "2025-06-01T12:00:00.000Z",
  event_type: "agent.approved",
  severity: "info",
  actor: { type: "operator", id: "op-1", name: "alice" },
  target: { type: "agent", id: "0123456789abcdef", name: "" },
  summary: "approved agent web-1",
} as AuditEvent;

t.test("unit: audit table names actor and target by type:name, falling back to the id", async (t) => {
  const system = {
    ...approved,
    id: "01J0000000000000000000000B",
    event_type: "audit.pruned",
    actor: { type: "", id: "system", name: "" },
    target: { type: "", id: "", name: "" },
    summary: "pruned 1024 events recorded before 2025-01-01T00:00:00.000Z",
  } as AuditEvent;
  t.equal(
    formatTable(AUDIT_COLUMNS, [approved, system].map(auditRow)),
    [
      "TIME                      TYPE            SEVERITY  ACTOR           TARGET                  SUMMARY                                                      ID",
      "2025-06-01T12:00:00.000Z  agent.approved  info      operator:alice  agent:0123456789abcdef  approved agent web-1                                         01J0000000000000000000000A",
      "2025-06-01T12:00:00.000Z  audit.pruned    info      system                                  pruned 1024 events recorded before 2025-01-01T00:00:00.000Z  01J0000000000000000000000B",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(AUDIT_COLUMNS, [].map(auditRow)), "TIME  TYPE  SEVERITY  ACTOR  TARGET  SUMMARY  ID\n");
});

t.test("unit: followed events are unaligned single lines", async (t) => {
  t.equal(auditStreamHeader(), "TIME  TYPE  SEVERITY  ACTOR  TARGET  SUMMARY  ID\n");
  t.equal(
    auditStreamLine(approved),
    "2025-06-01T12:00:00.000Z  agent.approved  info  operator:alice  agent:0123456789abcdef  approved agent web-1  01J0000000000000000000000A\n",
  );
});

t.test("unit: prune count and retention fields", async (t) => {
  t.equal(prunedLine(1, "2025-01-01T00:00:00Z"), "Deleted 1 audit event before 2025-01-01T00:00:00Z");
  t.equal(prunedLine(0, "2025-01-01T00:00:00Z"), "Deleted 0 audit events before 2025-01-01T00:00:00Z");
  t.same(retentionFields({ retention_days: null, source: "config", default_retention_days: null } as AuditRetention), [
    ["retention_days", "off (events are kept forever)"],
    ["source", "config (audit.retention_days)"],
    ["default_retention_days", "off"],
  ]);
  t.same(retentionFields({ retention_days: 30, source: "override", default_retention_days: 90 } as AuditRetention), [
    ["retention_days", 30],
    ["source", "override (set with orchctl audit retention set)"],
    ["default_retention_days", 90],
  ]);
});
