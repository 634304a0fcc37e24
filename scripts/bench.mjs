#!/usr/bin/env node
// npm run bench -- <name> [args]: runs bench/<name>.ts (each benchmark prints its own figures).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
const [name, ...args] = process.argv.slice(2);
const dir = new URL("../bench/", import.meta.url).pathname;
const available = readdirSync(dir)
  .filter((f) => f.endsWith(".ts"))
  .map((f) => f.replace(/\.ts$/, ""));
if (!name || !existsSync(`${dir}${name}.ts`)) {
  console.error(`usage: npm run bench -- <name>\navailable: ${available.join(", ")}`);
  process.exit(2);
}
const r = spawnSync(process.execPath, ["--conditions=orch-source", "--import", "tsx", `${dir}${name}.ts`, ...args], {
  stdio: "inherit",
});
process.exit(r.status ?? 1);
