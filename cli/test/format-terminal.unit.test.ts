import t from "tap";
import type { TerminalSession } from "@orch/client";
import {
  SESSION_COLUMNS,
  closedLine,
  sessionFields,
  sessionRows,
  transcriptWrittenNote,
} from "../src/format/terminal.js";
import { formatTable } from "../src/output.js";

const live = {
  session_id: "ts-1",
  node_id: "0123456789abcdef0123456789abcdef",
  node_name: "web-1",
  operator_name: "alice",
  status: "open",
  shell: "/bin/bash",
  cols: 120,
  rows: 40,
  opened_at: 1_748_779_200,
  closed_at: null,
  exit_code: null,
  close_reason: null,
  transcript_path: "/var/lib/orch/transcripts/ts-1.cast",
  sha256: null,
} as unknown as TerminalSession;
const done = {
  ...live,
  session_id: "ts-2",
  node_name: null,
  status: "closed",
  closed_at: 1_748_779_260,
  exit_code: 0,
  close_reason: "exit:0",
} as unknown as TerminalSession;

t.test("unit: sessions table, unnamed nodes by id, open ones without close time", async (t) => {
  t.equal(
    formatTable(SESSION_COLUMNS, sessionRows([live, done])),
    [
      "SESSION  NODE                              OPERATOR  STATUS  OPENED                    CLOSED                    EXIT",
      "ts-1     web-1                             alice     open    2025-06-01T12:00:00.000Z  -                         -",
      "ts-2     0123456789abcdef0123456789abcdef  alice     closed  2025-06-01T12:00:00.000Z  2025-06-01T12:01:00.000Z  0",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(SESSION_COLUMNS, sessionRows([])), "SESSION  NODE  OPERATOR  STATUS  OPENED  CLOSED  EXIT\n");
});

t.test("unit: session fields", async (t) => {
  const f = sessionFields(live);
  t.same(f.slice(0, 7), [
    ["session_id", "ts-1"],
    ["node", "web-1 (0123456789abcdef0123456789abcdef)"],
    ["operator", "alice"],
    ["status", "open"],
    ["shell", "/bin/bash"],
    ["size", "120x40"],
    ["opened_at", "2025-06-01T12:00:00.000Z"],
  ]);
  t.same(sessionFields(done)[1], ["node", "0123456789abcdef0123456789abcdef"]);
  t.equal(f.length, 12);
});

t.test("unit: close and transcript lines", async (t) => {
  t.equal(closedLine(done), "Closed session ts-2 (closed, exit:0)");
  t.equal(closedLine(live), "Closed session ts-1 (open, closed)");
  t.equal(transcriptWrittenNote(42, "out.cast", true), "wrote 42 bytes to out.cast (SHA-256 verified)");
  t.equal(transcriptWrittenNote(1, "out.cast", true), "wrote 1 byte to out.cast (SHA-256 verified)");
  t.equal(
    transcriptWrittenNote(42, "out.cast", false),
    "wrote 42 bytes to out.cast (session still live: not yet sealed)",
  );
});
