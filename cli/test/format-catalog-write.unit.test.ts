import t from "tap";
import { catalogWriteRequestLines } from "../src/format/catalog-write-request.js";

// `orchctl requests show` for a catalog.write request: what the approver reads before approving.
t.test("an assignment update shows each changed field, before → after", async (t) => {
  const lines = catalogWriteRequestLines({
    kind: "assignment",
    op: "update",
    name: "web",
    base_hash: "a".repeat(64),
    after: { selector: "env=prod,tier=web" },
    diff: {
      fields: [
        { field: "selector", before: "env=prod", after: "env=prod,tier=web" },
        { field: "description", before: null, after: "x" },
      ],
    },
  });
  t.same(lines, [
    "frozen change: update assignment web",
    "  against:  assignment as stored with hash aaaaaaaaaaaa",
    "  changes:",
    '    selector: "env=prod" → "env=prod,tier=web"',
    '    description: - → "x"',
  ]);
});

t.test("a module upload shows its version and the changed lines", async (t) => {
  const lines = catalogWriteRequestLines({
    kind: "module",
    op: "update",
    name: "site",
    base_hash: "b".repeat(64),
    after: { sha256: "c".repeat(64), resources: 2 },
    diff: {
      lines: { line: 3, removed: ["old"], added: ["new\u001b[31m"], truncated: true },
      before_sha256: "d".repeat(64),
    },
  });
  t.same(lines.slice(2), [
    "  version:  sha256 cccccccccccc, 2 resource(s)",
    "  diff (from line 3, was dddddddddddd):",
    "    - old",
    "    + new\\x1b[31m",
    "    … (cut: orchctl modules show for the whole module)",
  ]);
  t.notMatch(lines.join("\n"), /\u001b/, "control characters are shown, not obeyed");
});

t.test("a delete names the object only", async (t) => {
  t.same(
    catalogWriteRequestLines({
      kind: "module",
      op: "delete",
      name: "old",
      after: null,
      diff: { lines: { line: 1, removed: [], added: [], truncated: false } },
    }),
    ["frozen change: delete module old"],
  );
});
