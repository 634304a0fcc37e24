/**
 * Puppet on the peers job: `puppet apply` of each host's manifest, all hosts at once (xargs -P N),
 * each with its own confdir/vardir/ssldir so runs never wait on (or race to create) each other's files.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runMeasured } from "./peers-cpu.js";
import type { PeerTool, PhaseResult } from "./peers-phase.js";
import { puppetEvents, puppetManifest } from "./peers-puppet-files.js";

/** --detailed-exitcodes: 0 nothing to do, 2 changes; 1, 4 and 6 mean something failed. */
const PUPPET_OK = new Set([0, 2]);

export function puppetTool(dir: string, hosts: string[]): PeerTool {
  const roots = new Map(hosts.map((h) => [h, join(dir, "roots", h)]));
  for (const [h, r] of roots) {
    mkdirSync(r, { recursive: true, mode: 0o755 });
    mkdirSync(join(dir, "hosts", h), { recursive: true });
    writeFileSync(join(dir, "hosts", h, "site.pp"), puppetManifest(h, r));
  }
  writeFileSync(join(dir, "hosts.txt"), `${hosts.join("\n")}\n`);
  const run = async (flags: string): Promise<PhaseResult> => {
    const one = [
      "d=hosts/$0;",
      "puppet apply --color=false --detailed-exitcodes",
      "--confdir $d/conf --vardir $d/var --logdir $d/log --rundir $d/run --codedir $d/code --ssldir $d/ssl",
      `${flags} $d/site.pp > $d/out.log 2>&1; echo $? > $d/rc`,
    ].join(" ");
    const m = await runMeasured(`xargs -P ${hosts.length} -n 1 sh -c '${one}' < hosts.txt`, {}, dir);
    const changed: Record<string, number> = {};
    const bad: string[] = [];
    for (const h of hosts) {
      const out = readFileSync(join(dir, "hosts", h, "out.log"), "utf8");
      const rc = Number(readFileSync(join(dir, "hosts", h, "rc"), "utf8").trim());
      changed[h] = puppetEvents(out);
      if (!PUPPET_OK.has(rc))
        bad.push(
          `${h} (exit ${rc}): ${out
            .split("\n")
            .filter((l) => l.startsWith("Error: ") && !l.includes("Facter"))
            .slice(0, 3)
            .join(" | ")}`,
        );
    }
    const error = m.code !== 0 || bad.length > 0 ? `puppet failed: xargs exit ${m.code}; ${bad.join("; ")}` : undefined;
    return { wallS: m.wallS, cpuS: m.cpuS, changed, ...(error ? { error } : {}) };
  };
  return {
    name: "puppet",
    roots,
    apply: () => run(""),
    dryRun: () => run("--noop"),
    drift: () => run("--noop"),
    note: `puppet: puppet apply per host, ${hosts.length} in parallel (xargs -P), own confdir/vardir each; CPU = its whole process tree`,
    stop: async () => {},
  };
}
