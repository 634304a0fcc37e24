import t from "tap";
import type { Reencryption, SecretMeta } from "@orch/client";
import {
  SECRET_COLUMNS,
  reencryptFailedNote,
  reencryptedLine,
  restrictionText,
  secretFields,
  secretRows,
} from "../src/format/secrets.js";
import { formatTable } from "../src/output.js";

const db = {
  name: "db-password",
  description: null,
  expires_at: null,
  restriction: null,
  created_at: "2025-06-01T12:00:00.000Z",
  created_by: "alice",
  updated_at: "2025-06-02T12:00:00.000Z",
  updated_by: "bob",
} as SecretMeta;
const tls = {
  ...db,
  name: "tls-key",
  description: "web certificate key",
  expires_at: "2026-01-01T00:00:00Z",
  restriction: { node_ids: ["n1", "n2"], tags: { role: "web", env: "prod" } },
} as SecretMeta;

t.test("unit: restriction text names nodes and tags, or any approved agent", async (t) => {
  t.equal(restrictionText(null), "any approved agent");
  t.equal(restrictionText(tls.restriction), "nodes: n1,n2; tags: role=web,env=prod");
  t.equal(restrictionText({ node_ids: [], tags: { role: "db" } }), "tags: role=db");
  const names = (id: string) => ({ n1: "web-1" })[id] ?? id;
  t.equal(restrictionText(tls.restriction, names), "nodes: web-1,n2; tags: role=web,env=prod", "names where known");
});

t.test("unit: secrets table, and an empty one", async (t) => {
  t.equal(
    formatTable(SECRET_COLUMNS, secretRows([db, tls])),
    [
      "NAME         RESTRICTION                            EXPIRES               UPDATED                   DESCRIPTION",
      "db-password  any approved agent                     never                 2025-06-02T12:00:00.000Z  -",
      "tls-key      nodes: n1,n2; tags: role=web,env=prod  2026-01-01T00:00:00Z  2025-06-02T12:00:00.000Z  web certificate key",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(SECRET_COLUMNS, secretRows([])), "NAME  RESTRICTION  EXPIRES  UPDATED  DESCRIPTION\n");
});

t.test("unit: secret fields and re-encryption lines", async (t) => {
  t.same(secretFields(db), [
    ["name", "db-password"],
    ["description", null],
    ["expires_at", "never"],
    ["restriction", "any approved agent"],
    ["created_at", "2025-06-01T12:00:00.000Z"],
    ["created_by", "alice"],
    ["updated_at", "2025-06-02T12:00:00.000Z"],
    ["updated_by", "bob"],
  ]);
  const r = { reencrypted: 3, active_key: "k2", failed: ["old-1", "old-2"] } as Reencryption;
  t.equal(reencryptedLine(r), "Re-encrypted 3 secrets with key k2");
  t.equal(reencryptedLine({ ...r, reencrypted: 1 }), "Re-encrypted 1 secret with key k2");
  t.equal(reencryptFailedNote(r), "could not decrypt (left unchanged): old-1, old-2");
  t.equal(reencryptFailedNote({ ...r, failed: [] }), null);
});
