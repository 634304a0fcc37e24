// `npm run up` builds the orch-agent package (scripts/agent-package/build.ts) in the background once
// the services are up, so /install/agent.sh has something to install: only when no package was
// built from the current inputs (scripts/lib/agent-package-inputs.mjs) into this releases dir with
// this signing key; a later run with the same inputs skips it.
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { setPriority } from "node:os";
import { join } from "node:path";
import { agentPackageHash } from "./agent-package-inputs.mjs";
import { shownPath } from "./up-state.mjs";

/**
 * What to do about the package: `{ build: false }` when the one in `releasesDir` was built from
 * these inputs, else `{ build: true, reason }`. `stamp` is where the hash of the last build is kept.
 */
export function agentPackagePlan({ root, stateDir, releasesDir, publicKeyFile }) {
  const version = JSON.parse(readFileSync(join(root, "agent/package.json"), "utf8")).version;
  const hash = agentPackageHash(root, { releasesDir, signedBy: readFileSync(publicKeyFile, "utf8").trim() });
  const stamp = join(stateDir, "agent-package.sha256");
  const dir = join(releasesDir, version);
  const built = existsSync(join(dir, "manifest.json"));
  const last = existsSync(stamp) ? readFileSync(stamp, "utf8").trim() : "";
  const base = { version, hash, stamp, dir, log: join(stateDir, "agent-package.log") };
  if (built && last === hash) return { ...base, build: false };
  const reason = !built ? "none built yet" : last ? "its inputs changed" : "not built by up from these inputs";
  return { ...base, build: true, reason };
}

/**
 * Runs build.ts for `plan` at low priority, output in plan.log; says one line when it starts and one
 * when the package is published (or why not). Returns the child, for up to stop with the rest.
 */
export function buildAgentPackageInBackground(plan, { root, releasesDir, signingKey, say, stopping, installLine }) {
  say(
    `building the orch-agent ${plan.version} package in the background (${plan.reason}; output in ${shownPath(plan.log)})`,
  );
  const out = openSync(plan.log, "w");
  const child = spawn(
    process.execPath,
    [
      "--conditions=orch-source",
      "--import=tsx",
      join(root, "scripts/agent-package/build.ts"),
      "--out",
      releasesDir,
      "--signing-key",
      signingKey,
    ],
    { cwd: root, stdio: ["ignore", out, out] },
  );
  closeSync(out);
  // The services answer first: the build (esbuild, xz) takes what CPU they leave.
  try {
    setPriority(child.pid, 10);
  } catch {}
  child.on("error", (err) => say(`the orch-agent package was not built: ${err.message}`));
  child.on("exit", (code, signal) => {
    if (stopping()) return;
    if (code === 0) {
      writeFileSync(plan.stamp, `${plan.hash}\n`);
      say(`published the orch-agent ${plan.version} package in ${shownPath(plan.dir)}: ${installLine}`);
      return;
    }
    const lines = readFileSync(plan.log, "utf8").trim().split("\n");
    const why = lines.findLast((l) => /error|failed|cannot|no /i.test(l)) ?? lines.at(-1) ?? "";
    say(
      `the orch-agent package was not built (${signal ?? `exit ${code}`}): ${why.trim()} (full output in ${shownPath(plan.log)})`,
    );
  });
  return child;
}
