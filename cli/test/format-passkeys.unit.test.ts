import t from "tap";
import {
  NO_PASSKEYS_HINT,
  PASSKEY_COLUMNS,
  ownerLabel,
  passkeyRows,
  type PasskeyView,
} from "../src/format/passkeys.js";
import { formatTable } from "../src/output.js";

const now = Date.parse("2026-03-01T12:00:00.000Z");
const laptop: PasskeyView = {
  id: "01PKLAPTOP",
  name: "laptop",
  created_at: "2026-02-01T00:00:00.000Z",
  last_used_at: "2026-03-01T11:55:00.000Z",
  backed_up: true,
  transports: ["internal", "hybrid"],
};
const yubikey: PasskeyView = {
  id: "01PKYUBI",
  name: "yubikey",
  created_at: "2026-01-15T00:00:00.000Z",
  last_used_at: null,
  backed_up: false,
  transports: [],
};

t.test("rows: oldest first, never-used and empty transports shown plainly", async (t) => {
  const rows = passkeyRows([laptop, yubikey], now);
  t.same(rows, [
    ["01PKYUBI", "yubikey", "2026-01-15T00:00:00.000Z", "never", "no", "-"],
    ["01PKLAPTOP", "laptop", "2026-02-01T00:00:00.000Z", "5m ago", "yes", "hybrid,internal"],
  ]);
  t.same(laptop.transports, ["internal", "hybrid"], "the input is not reordered");
  const table = formatTable(PASSKEY_COLUMNS, rows).split("\n");
  t.match(table[0], /^ID\s+NAME\s+CREATED\s+LAST USED\s+SYNCED\s+TRANSPORTS$/);
  t.equal(table.length, 4, "header, two rows, final newline");
});

t.test("labels and hints", async (t) => {
  t.equal(ownerLabel(), "your");
  t.equal(ownerLabel({ name: "alice" }), "alice's");
  t.match(NO_PASSKEYS_HINT, /orchctl console/, "points at the console, where registration happens");
});
