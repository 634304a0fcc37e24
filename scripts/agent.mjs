#!/usr/bin/env node
// npm run agent -- <flags>: runs the built orch-agent (agent/dist/main.js) with the given flags,
// e.g. `npm run agent -- --server 127.0.0.1:7443 --data-dir .orch/agents/dev`.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
const main = new URL("../agent/dist/main.js", import.meta.url).pathname;
if (!existsSync(main)) {
  console.error("agent/dist/main.js is missing: run `npm run build` (or `npx tsc -p agent`) first");
  process.exit(2);
}
const child = spawn(process.execPath, [main, ...process.argv.slice(2)], { stdio: "inherit" });
// Forward stop signals so the agent shuts down cleanly (it records a clean disconnect).
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
