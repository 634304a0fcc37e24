#!/usr/bin/env node
// npm run agent -- <flags>: runs the built orch-agent (agent/dist/main.js) with the given flags,
// e.g. `npm run agent -- --server 127.0.0.1:7443 --data-dir .orch/agents/dev`.
// Unless the flags or ORCH_AGENT_* variables say how to trust the server, the agent trusts the
// development CA `npm run up` made in its state dir (.orch/tls, or ORCH_UP_STATE_DIR/tls: the
// local agents service's certificate).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { onPinnedNode } from "./lib/pinned-node.mjs";
import { shownPath, upStateDir } from "./lib/up-state.mjs";

// On Debian's Node 20 (older than .node-version): the same command again on the pinned Node.
await onPinnedNode();
const main = new URL("../agent/dist/main.js", import.meta.url).pathname;
const devCa = join(upStateDir(), "tls/ca.crt");
if (!existsSync(main)) {
  console.error("agent/dist/main.js is missing: run `npm run build` (or `npx tsc -p agent`) first");
  process.exit(2);
}
const args = process.argv.slice(2);
const { choosesTrust } = await import(new URL("../agent/dist/options.js", import.meta.url).href);
const chosen = choosesTrust(args, process.env);
const asksHelp = args.some((a) => ["--help", "-h", "--version"].includes(a));
const trust = !chosen && !asksHelp && existsSync(devCa) ? ["--ca", devCa] : [];
if (trust.length) {
  console.error(
    `[agent] trusting the development CA ${shownPath(devCa)} (--ca, --server-fingerprint or --insecure choose)`,
  );
}
// The heap flags of a process terminal output crosses (packages/kit/src/bulk-gc.ts says why).
const { nodeFlagsFor } = await import(new URL("../packages/kit/dist/bulk-gc.js", import.meta.url).href);
const child = spawn(process.execPath, [...nodeFlagsFor("agent"), main, ...trust, ...args], { stdio: "inherit" });
// Forward stop signals so the agent shuts down cleanly (it records a clean disconnect).
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
