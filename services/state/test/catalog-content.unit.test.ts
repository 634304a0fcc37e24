import t from "tap";
import { contentHash } from "@orch/contracts";
import {
  assignmentContent,
  assignmentDiff,
  assignmentView,
  baseHash,
  catalogContentHash,
  catalogSummary,
  lineDiff,
  MAX_DIFF_LINES,
  moduleContent,
} from "../src/approvals/catalog-content.js";
import type { AssignmentRow, ModuleRow } from "../src/db/catalog.js";

// What a held catalog write (catalog.write) shows its approvers and the hash it executes against.
const web: AssignmentRow = {
  name: "web",
  selector: "env=prod",
  modules: ["site"],
  description: "the web tier",
  created_at: 1,
  created_by: "op1",
  enforce: false,
  source: null,
  source_commit: "",
  apply_on_sync: false,
  sync_batch: "",
  sync_max_failures: null,
  parameters: { port: 80 },
};
const mod = (content: string, sha256: string): ModuleRow => ({
  name: "site",
  content,
  sha256,
  description: "",
  resource_count: 2,
  uploaded_at: 1,
  uploaded_by: "op1",
  uploaded_by_name: "alice",
  source: null,
  source_commit: "",
  removed_from_source: false,
  files: null,
});

t.test("the base hash covers the definition, not bookkeeping", async (t) => {
  t.equal(baseHash("assignment", undefined), null, "nothing stored: null");
  const h = baseHash("assignment", web);
  t.match(h, /^[0-9a-f]{64}$/);
  t.equal(baseHash("assignment", { ...web, created_at: 99, created_by: "x" }), h, "when or by whom: same");
  for (const change of [
    { selector: "env=dev" },
    { modules: ["site", "extra"] },
    { description: null },
    { enforce: true },
    { parameters: { port: 81 } },
    { source: "git" },
  ])
    t.not(baseHash("assignment", { ...web, ...change }), h, `${Object.keys(change)[0]} changes it`);
  t.equal(baseHash("module", mod("a", "s1")), baseHash("module", mod("a", "s1")));
  t.not(baseHash("module", mod("a", "s1")), baseHash("module", mod("b", "s2")), "a new version changes it");
});

t.test("assignment diffs name the changed fields", async (t) => {
  const next = { ...web, selector: "env=prod,tier=web", parameters: { port: 81 } };
  t.same(assignmentDiff(assignmentView(web), assignmentView(next)), [
    { field: "selector", before: "env=prod", after: "env=prod,tier=web" },
    { field: "parameters", before: { port: 80 }, after: { port: 81 } },
  ]);
  t.same(assignmentDiff(assignmentView(web), assignmentView(web)), [], "no change, no fields");
  const created = assignmentDiff(null, assignmentView(web)).map((f) => f.field);
  t.same(created, ["selector", "modules", "description", "enforce", "parameters"], "a create lists what it sets");
  const deleted = assignmentDiff(assignmentView(web), null);
  t.ok(deleted.every((f) => f.after === null));
});

t.test("line diffs trim the equal start and end", async (t) => {
  t.same(lineDiff("a\nb\nc\nd", "a\nB\nC\nd"), { line: 2, removed: ["b", "c"], added: ["B", "C"], truncated: false });
  t.same(lineDiff("", "x\ny"), { line: 1, removed: [], added: ["x", "y"], truncated: false });
  t.same(lineDiff("x", "x"), { line: 2, removed: [], added: [], truncated: false });
  t.same(lineDiff("a\nb", "a\nx\nb"), { line: 2, removed: [], added: ["x"], truncated: false }, "an insertion");
  const long = Array.from({ length: MAX_DIFF_LINES + 5 }, (_, i) => `l${i}`).join("\n");
  const cut = lineDiff("", long);
  t.equal(cut.added.length, MAX_DIFF_LINES);
  t.ok(cut.truncated);
});

t.test("content and summary", async (t) => {
  const next = { ...web, selector: "env=dev", modules: ["site", "x"] };
  const c = assignmentContent("update", "web", { current: web, next }, "p1");
  t.equal(c.base_hash, baseHash("assignment", web));
  t.equal(c.pending_id, "p1");
  t.equal(catalogSummary(c), "update assignment web (selector, modules)");
  t.equal(catalogContentHash(c), contentHash(JSON.parse(JSON.stringify(c))), "hashes as auth stores it");
  t.equal(
    catalogSummary(assignmentContent("create", "web", { current: undefined, next: web }, "p")),
    "create assignment web",
  );
  t.equal(
    catalogSummary(assignmentContent("delete", "web", { current: web, next: undefined }, "p")),
    "delete assignment web",
  );
  const up = moduleContent("update", "site", { current: mod("a\nb", "s1"), next: mod("a\nc", "s2") }, "p2");
  t.equal(catalogSummary(up), "update module site (2 resources)");
  t.same(up.after, { sha256: "s2", resources: 2, description: "", files: 0, source: null });
  t.same(up.diff, { lines: { line: 2, removed: ["b"], added: ["c"], truncated: false }, before_sha256: "s1" });
  const del = moduleContent("delete", "site", { current: mod("a", "s1"), next: undefined }, "p3");
  t.equal(del.after, null);
  t.equal(catalogSummary(del), "delete module site");
});
