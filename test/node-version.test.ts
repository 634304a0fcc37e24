import t from "tap";
import { readFileSync } from "node:fs";

// The suite runs on the Node LTS the project pins (.node-version; docs/node.md), and package.json
// says so: CI puts that version on PATH (scripts/node-lts.sh) when the system one is older.
const root = new URL("../", import.meta.url);
const pinned = readFileSync(new URL(".node-version", root), "utf8").trim();
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { engines: { node: string } };

t.test("the tests run on the pinned Node LTS major", async (t) => {
  t.match(pinned, /^\d+\.\d+\.\d+$/);
  t.equal(process.versions.node.split(".")[0], pinned.split(".")[0], `running ${process.version}, pinned ${pinned}`);
});

t.test("engines.node accepts the pinned version and refuses the end-of-life ones", async (t) => {
  const min = /^>=(\d+)\.(\d+)$/.exec(pkg.engines.node);
  t.ok(min, `engines.node is a lower bound: ${pkg.engines.node}`);
  const [major, minor] = pinned.split(".").map(Number) as [number, number];
  t.ok(major > Number(min![1]) || (major === Number(min![1]) && minor >= Number(min![2])), "pinned ≥ engines");
  t.ok(Number(min![1]) >= 24, "Node 20 and 22 are not claimed");
});
