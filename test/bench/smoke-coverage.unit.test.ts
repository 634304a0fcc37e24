// A bench cannot be added (or removed) without its smoke test: every bench/<name>.ts has a
// test/bench/<name>-smoke.test.ts, and each of those runs that bench (soak's runs it directly, the
// others through the smoke table).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import t from "tap";
import { SMOKE } from "./lib/smoke-table.js";

const BENCH = fileURLToPath(new URL("../../bench/", import.meta.url));
const HERE = fileURLToPath(new URL("./", import.meta.url));

// As scripts/bench.mjs lists them: every .ts file directly in bench/ is a bench.
const benches = readdirSync(BENCH)
  .filter((f) => f.endsWith(".ts"))
  .map((f) => f.slice(0, -".ts".length))
  .sort();
const smokeFiles = readdirSync(HERE)
  .map((f) => /^(.+)-smoke\.test\.ts$/.exec(f)?.[1])
  .filter((n): n is string => n !== undefined)
  .sort();

t.test("every bench has a smoke test and every smoke test a bench", async (t) => {
  t.ok(benches.length > 0, "bench/ lists benches");
  t.same(smokeFiles, benches);
});

t.test("each smoke test runs its own bench", async (t) => {
  for (const name of smokeFiles) {
    const src = readFileSync(`${HERE}${name}-smoke.test.ts`, "utf8");
    const viaTable = src.includes(`smokeBench("${name}")`);
    const direct = src.includes(`"scripts/bench.mjs", "${name}"`);
    t.ok(viaTable || direct, `${name}-smoke.test.ts runs bench ${name}`);
    if (viaTable) t.ok(SMOKE[name], `the smoke table has ${name}`);
  }
  for (const name of Object.keys(SMOKE)) t.ok(existsSync(`${BENCH}${name}.ts`), `bench/${name}.ts exists`);
});
