import t from "tap";
import type { Discovery, Status } from "@orch/client";
import {
  SERVICE_COLUMNS,
  TAG_COLUMNS,
  announcedLine,
  serviceRows,
  statusFields,
  tagIndexRows,
} from "../src/format/status.js";
import { formatTable } from "../src/output.js";

const st = {
  status: "degraded",
  api_version: "1",
  protocol_version: 2,
  services: { state: "up", auth: "up", notify: "unreachable" },
} as unknown as Status;

t.test("unit: status fields and services sorted by name", async (t) => {
  t.same(statusFields(st, "http://127.0.0.1:8080"), [
    ["server", "http://127.0.0.1:8080"],
    ["status", "degraded"],
    ["api_version", "1"],
    ["protocol_version", 2],
  ]);
  t.equal(
    formatTable(SERVICE_COLUMNS, serviceRows(st.services)),
    "SERVICE  STATUS\nauth     up\nnotify   unreachable\nstate    up\n",
  );
  t.equal(formatTable(SERVICE_COLUMNS, serviceRows(undefined as unknown as Status["services"])), "SERVICE  STATUS\n");
});

t.test("unit: tag index sorted by key, values comma-separated", async (t) => {
  t.equal(
    formatTable(TAG_COLUMNS, tagIndexRows({ role: ["db", "web"], env: ["production", "staging", "test"] })),
    "KEY   VALUES\nenv   production,staging,test\nrole  db,web\n",
  );
  t.equal(formatTable(TAG_COLUMNS, tagIndexRows({})), "KEY  VALUES\n");
});

t.test("unit: discovery names where it was sent, or nobody", async (t) => {
  t.equal(
    announcedLine({
      announced: "http://10.0.0.1:8443",
      sent_to: ["255.255.255.255:9999", "10.0.0.9:9999"],
    } as unknown as Discovery),
    "Announced http://10.0.0.1:8443 to 255.255.255.255:9999, 10.0.0.9:9999",
  );
  t.equal(announcedLine({ announced: "x", sent_to: [] } as unknown as Discovery), "Announced x to nobody");
});
