import t from "tap";
import { longestFunctions, MAX_FUNCTION_LINES } from "../scripts/long-functions.mjs";

// No hand-written function outside tests and benches is a monolith. The script is the one
// list (`node scripts/long-functions.mjs` prints the top 10); this keeps it under the limit.
interface Fn {
  file: string;
  line: number;
  name: string;
  lines: number;
}

const all = longestFunctions() as Fn[];

t.test("the list covers the hand-written tree and leaves tests, benches and generated code out", async (t) => {
  const files = new Set(all.map((f) => f.file));
  t.ok(files.has("services/gateway/src/app.ts"), "a gateway source file is measured");
  t.ok(files.has("agent/src/daemon.ts"), "the agent daemon is measured");
  t.notOk(
    [...files].some((f) => /(^|\/)(test|bench)\//.test(f) || /\/gen\//.test(f)),
    "no test, bench or generated file",
  );
});

t.test(`no hand-written function is longer than ${MAX_FUNCTION_LINES} lines`, async (t) => {
  t.comment("longest 10:");
  for (const f of all.slice(0, 10)) t.comment(`${String(f.lines).padStart(5)}  ${f.file}:${f.line}  ${f.name}`);
  const over = all.filter((f) => f.lines > MAX_FUNCTION_LINES).map((f) => `${f.file}:${f.line} ${f.name} (${f.lines})`);
  t.same(over, [], `functions over ${MAX_FUNCTION_LINES} lines`);
});
