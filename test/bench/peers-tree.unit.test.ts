// The peers bench's "same work" check: the text of a managed root names every entry with its type,
// mode, owner and content hash or link target, so any difference between tools shows.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { readTree, sortTree, treeDiff, treeSum, treeText } from "../../bench/lib/peers-tree.js";

function makeRoot(t: Test, opts: { order: "ab" | "ba"; fileMode?: number; content?: string; link?: string }) {
  const root = mkdtempSync(join(tmpdir(), "peers-tree-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const steps = {
    a: () => {
      mkdirSync(join(root, "conf"), { mode: 0o755 });
      chmodSync(join(root, "conf"), 0o750);
      writeFileSync(join(root, "conf", "x.conf"), opts.content ?? "host = h1\n");
      chmodSync(join(root, "conf", "x.conf"), opts.fileMode ?? 0o640);
    },
    b: () => {
      mkdirSync(join(root, "data"));
      chmodSync(join(root, "data"), 0o700);
    },
  };
  for (const k of opts.order) steps[k as "a" | "b"]();
  symlinkSync(opts.link ?? "conf", join(root, "current"));
  return root;
}

t.test("every entry, sorted, with type, mode, owner and hash or target", async (t) => {
  const tree = readTree(makeRoot(t, { order: "ab" }));
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  t.same(
    tree.map((e) => [e.rel, e.type, e.mode, e.owner]),
    [
      ["conf", "dir", "0750", `${uid}:${gid}`],
      ["conf/x.conf", "file", "0640", `${uid}:${gid}`],
      ["current", "link", "-", `${uid}:${gid}`],
      ["data", "dir", "0700", `${uid}:${gid}`],
    ],
  );
  t.match(treeText(tree), /^conf\/x\.conf file 0640 \S+ [0-9a-f]{64}$/m);
  t.match(treeText(tree), /^current link - \S+ ->conf$/m);
});

t.test("the order things were made in does not matter", async (t) => {
  t.equal(treeSum(readTree(makeRoot(t, { order: "ab" }))), treeSum(readTree(makeRoot(t, { order: "ba" }))));
});

t.test("a different mode, content or link target makes the roots differ", async (t) => {
  const base = readTree(makeRoot(t, { order: "ab" }));
  for (const other of [{ fileMode: 0o644 }, { content: "host = h2\n" }, { link: "data" }]) {
    const tree = readTree(makeRoot(t, { order: "ab", ...other }));
    t.not(treeSum(tree), treeSum(base), JSON.stringify(other));
    const d = treeDiff(base, tree);
    t.equal(d.onlyA.length, 1);
    t.equal(d.onlyB.length, 1);
  }
});

t.test("sortTree orders by relative path", async (t) => {
  const e = (rel: string) => ({ rel, type: "dir" as const, mode: "0755", owner: "0:0", what: "" });
  t.same(
    sortTree([e("b"), e("a/z"), e("a")]).map((x) => x.rel),
    ["a", "a/z", "b"],
  );
});
