import t from "tap";
import { subset } from "../src/engine/operation-run.js";
import type { RenderedResource } from "../src/engine/render.js";

// The resources an enforcement apply sends: the drifted ones only, and no requires edge to a
// resource left out (the agent refuses a request naming a resource it was not given).
const res = (module: string, id: string, requires: string[] = []): RenderedResource => ({
  module,
  id,
  type: "file",
  spec: {},
  requires,
});
const all = [res("m", "dir"), res("m", "a", ["m/dir"]), res("m", "b", ["m/dir", "m/a"]), res("n", "c", ["n/x"])];

t.test("unit: without a subset every resource is sent unchanged", async (t) => {
  t.equal(subset(all), all);
});

t.test("unit: only the named resources, edges among them kept, edges to the others dropped", async (t) => {
  t.same(
    subset(all, new Set(["m/a", "m/b"])).map((r) => [`${r.module}/${r.id}`, r.requires]),
    [
      ["m/a", []],
      ["m/b", ["m/a"]],
    ],
  );
  t.same(subset(all, new Set(["m/zzz"])), []);
  t.same(all[2]!.requires, ["m/dir", "m/a"], "the input is not modified");
});
