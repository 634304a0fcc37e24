/**
 * npm run bench -- agent-package
 *
 * Builds the orch-agent packages (scripts/agent-package) into a temp dir and prints their sizes
 * (goal ≤ 60 MB each), then the cold start: the tarball extracted into a temp root, the bundled
 * agent (its own Node.js) started against a real agents service (services/agents/dist: run
 * `npm run build` first; plaintext link, private NATS and database), timed from spawn to the
 * agent's "link up" (Welcome received; goal < 1 s). Runs once.
 */
import { execFileSync, spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTestDatabase, freePort, startNats } from "@orch/kit/testing";
import { buildAgentPackage } from "../scripts/agent-package/build.js";
import { startAgentsServiceProcess } from "./lib/agents-process.js";
import { children } from "./lib/children.js";

const _ROOT = fileURLToPath(new URL("../", import.meta.url));
const GOAL_BYTES = 60 * 1024 * 1024;
const GOAL_START_MS = 1000;
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
const progress = (msg: string) => process.stderr.write(`bench agent-package: ${msg}\n`);

const work = mkdtempSync(join(tmpdir(), "orch-bench-agent-package-"));
// Children are killed on exit by lib/children.ts (registered first, so they die before this removal).
process.on("exit", () => rmSync(work, { recursive: true, force: true }));

console.log(`agent-package bench (${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)} at the start)`);
const t0 = performance.now();
// A throwaway signing key: the bench installs from the tarball, no signature is checked.
const { dir, manifest } = await buildAgentPackage({
  outDir: join(work, "out"),
  signingKey: generateKeyPairSync("ed25519").privateKey,
  log: (l) => progress(l),
});
console.log(
  `build: ${((performance.now() - t0) / 1000).toFixed(1)} s (orch-agent ${manifest.version}, node ${manifest.node_version})`,
);
for (const p of manifest.packages)
  console.log(
    `  ${p.file.padEnd(40)} ${mb(p.size).padStart(9)}  goal ≤ 60 MB: ${p.size <= GOAL_BYTES ? "met" : "NOT met"}`,
  );

const root = join(work, "root");
mkdirSync(root);
const tar = manifest.packages.find((p) => p.kind === "tar")!;
execFileSync("tar", ["-xzf", join(dir, tar.file), "-C", root]);

const nats = await startNats();
const db = await createTestDatabase("orch_bench");
const linkPort = await freePort();
try {
  const { child: service } = await startAgentsServiceProcess({ nats, db, linkPort, track: (c) => children.add(c) });

  // Cold start: a fresh data dir (new identity key), the page cache warm from the extract as after an install.
  const start = performance.now();
  const agent = spawn(
    join(root, "opt/orch-agent/current/bin/orch-agent"),
    ["--server", `127.0.0.1:${linkPort}`, "--insecure", "--data-dir", join(work, "data"), "--no-terminal"],
    { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
  );
  children.add(agent);
  const linkUpMs = await new Promise<number>((resolve, reject) => {
    let out = "";
    const seen = (d: Buffer) => {
      out += d.toString();
      if (out.includes("link up")) resolve(performance.now() - start);
    };
    agent.stdout!.on("data", seen);
    agent.stderr!.on("data", seen);
    agent.once("exit", (code) => reject(new Error(`agent exited (${code}):\n${out.slice(-2000)}`)));
    setTimeout(() => reject(new Error(`no "link up" in 30 s:\n${out.slice(-2000)}`)), 30_000).unref();
  });
  console.log(
    `cold start (spawn → Welcome, bundled node): ${linkUpMs.toFixed(0)} ms  goal < 1 s: ${linkUpMs < GOAL_START_MS ? "met" : "NOT met"}`,
  );
  console.log(`load average at the end: ${loadavg()[0]!.toFixed(1)}`);
  agent.kill("SIGTERM");
  service.kill("SIGTERM");
} finally {
  await db.drop();
  await nats.stop();
}
