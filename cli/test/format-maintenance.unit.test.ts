import t from "tap";
import type { MaintenanceWindow } from "@orch/client";
import { WINDOW_COLUMNS, windowFields, windowRows, windowVerbLine } from "../src/format/maintenance.js";
import { formatTable } from "../src/output.js";

const w = {
  id: "mw-1",
  starts_at: 1_748_779_200,
  ends_at: 1_748_786_400,
  active: true,
  reason: "kernel upgrades on every web node, rolling",
  created_by: "alice",
} as MaintenanceWindow;

t.test("unit: windows table with ISO times, and an empty one", async (t) => {
  t.equal(
    formatTable(WINDOW_COLUMNS, windowRows([w, { ...w, id: "mw-2", active: false, reason: "db" }])),
    [
      "ID    START                     END                       ACTIVE  REASON",
      "mw-1  2025-06-01T12:00:00.000Z  2025-06-01T14:00:00.000Z  yes     kernel upgrades on every web node, rolling",
      "mw-2  2025-06-01T12:00:00.000Z  2025-06-01T14:00:00.000Z  no      db",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(WINDOW_COLUMNS, windowRows([])), "ID  START  END  ACTIVE  REASON\n");
});

t.test("unit: window fields and the verb line", async (t) => {
  t.same(windowFields(w), [
    ["id", "mw-1"],
    ["starts_at", "2025-06-01T12:00:00.000Z"],
    ["ends_at", "2025-06-01T14:00:00.000Z"],
    ["active", "yes"],
    ["reason", "kernel upgrades on every web node, rolling"],
    ["created_by", "alice"],
  ]);
  t.equal(windowVerbLine("Ended", w), "Ended maintenance window mw-1");
});
