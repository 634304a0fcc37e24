/**
 * npm run bench -- peers [--hosts 10,50] [--tools orch,ansible,puppet]
 *
 * The same job done by this project, Ansible and Puppet on this machine, one tool after the other:
 * N hosts, each with a managed root and a module of 20 resources (bench/lib/peers-job.ts). Phases:
 * first apply, second apply (no change), dry run (plan / --check --diff / --noop) and drift
 * detection over every host after a hand edit on the first. Prints wall time and CPU-seconds per
 * tool and phase, the ratios and "ahead"/"behind" per row, with the load average; writes the raw
 * figures to bench/results/peers-<time>.json. Checks that every tool wrote identical managed roots
 * and reported the same changes; exits non-zero only when a tool failed or the work differed.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ansibleTool } from "./lib/peers-ansible.js";
import { DRIFT_FILE, hostName, JOB_RESOURCES } from "./lib/peers-job.js";
import { parsePeersOptions, type ToolName } from "./lib/peers-options.js";
import { orchTool } from "./lib/peers-orch.js";
import { expectedChanges, type Phase, type PeerTool, type PhaseResult } from "./lib/peers-phase.js";
import { puppetTool } from "./lib/peers-puppet.js";
import { formatTable, type PhaseFigures, verdict } from "./lib/peers-table.js";
import { readTree, type TreeEntry, treeDiff, treeSum } from "./lib/peers-tree.js";

let opts: ReturnType<typeof parsePeersOptions>;
try {
  opts = parsePeersOptions(process.argv.slice(2));
} catch (err) {
  console.error(`bench peers: ${(err as Error).message}`);
  process.exit(2);
}

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
const makers: Record<ToolName, (dir: string, hosts: string[]) => PeerTool | Promise<PeerTool>> = {
  orch: orchTool,
  ansible: ansibleTool,
  puppet: puppetTool,
};

interface ToolRun {
  phases: Partial<Record<Phase, PhaseResult>>;
  trees: Map<string, TreeEntry[]>;
  note: string;
  error?: string;
}

async function runTool(name: ToolName, dir: string, hosts: string[]): Promise<ToolRun> {
  const run: ToolRun = { phases: {}, trees: new Map(), note: "" };
  let tool: PeerTool | undefined;
  try {
    tool = await makers[name](dir, hosts);
    run.note = tool.note;
    const t = tool;
    const steps: [Phase, () => Promise<PhaseResult>][] = [
      ["first apply", () => t.apply()],
      ["second apply", () => t.apply()],
      ["dry run", () => t.dryRun()],
      [
        "drift detection",
        () => {
          // The hand edit, as an admin on the first host would make it.
          appendFileSync(join(t.roots.get(hosts[0]!)!, DRIFT_FILE), "# edited by hand\n");
          return t.drift();
        },
      ],
    ];
    for (const [phase, step] of steps) {
      if (phase === "drift detection") for (const [h, root] of t.roots) run.trees.set(h, readTree(root));
      const r = await step();
      run.phases[phase] = r;
      console.log(
        `  ${name} ${phase}: ${r.wallS.toFixed(2)} s wall, ${r.cpuS.toFixed(2)} CPU-s${r.error ? " FAILED" : ""}`,
      );
      if (r.error) {
        run.error = `${phase}: ${r.error}`;
        break;
      }
      const wrong = hosts.filter((h) => (r.changed[h] ?? -1) !== expectedChanges(phase, h, hosts[0]!, JOB_RESOURCES));
      if (wrong.length > 0) {
        run.error = `${phase}: unexpected change counts ${wrong.map((h) => `${h}=${r.changed[h] ?? "none"} (want ${expectedChanges(phase, h, hosts[0]!, JOB_RESOURCES)})`).join(", ")}`;
        break;
      }
    }
  } catch (err) {
    run.error = `${(err as Error).stack ?? err}`;
  } finally {
    await tool?.stop().catch((e) => console.error(`${name} stop: ${(e as Error).message}`));
  }
  return run;
}

/** Per host, whether every tool's root matches the first tool's; the differing lines if not. */
function compareRoots(runs: Map<ToolName, ToolRun>, hosts: string[]): string[] {
  const problems: string[] = [];
  const tools = [...runs.keys()];
  const [first, ...rest] = tools;
  if (!first) return problems;
  for (const h of hosts) {
    const a = runs.get(first)!.trees.get(h);
    if (!a) continue;
    for (const t of rest) {
      const b = runs.get(t)!.trees.get(h);
      if (!b || treeSum(a) === treeSum(b)) continue;
      const d = treeDiff(a, b);
      problems.push(
        `${h}: ${first} and ${t} differ: only ${first}: ${d.onlyA.join("; ")} | only ${t}: ${d.onlyB.join("; ")}`,
      );
    }
  }
  return problems;
}

const base = mkdtempSync(join(tmpdir(), "orch-peers-"));
const report: Record<string, unknown>[] = [];
let broken = false;
console.log(
  `peers: tools ${opts.tools.join(", ")}; hosts ${opts.hosts.join(", ")}; ${JOB_RESOURCES} resources per host`,
);
for (const n of opts.hosts) {
  const hosts = Array.from({ length: n }, (_, i) => hostName(i));
  const runs = new Map<ToolName, ToolRun>();
  for (const name of opts.tools) {
    console.log(`N=${n} ${name} (load average ${load()})`);
    runs.set(name, await runTool(name, join(base, `n${n}`, name), hosts));
  }
  const rows = (["first apply", "second apply", "dry run", "drift detection"] as Phase[]).map((phase) => {
    const figures: PhaseFigures = {};
    for (const [t, r] of runs) {
      const p = r.phases[phase];
      if (p && !p.error) figures[t] = { wallS: p.wallS, cpuS: p.cpuS };
    }
    return { phase, figures };
  });
  const rootProblems = compareRoots(runs, hosts);
  const verified = [...runs.values()].every((r) => r.trees.size === n);
  console.log("");
  for (const l of formatTable(n, opts.tools, rows)) console.log(l);
  console.log(`load average ${load()}`);
  for (const r of runs.values()) if (r.note) console.log(`  ${r.note}`);
  console.log(
    rootProblems.length === 0 && verified
      ? `managed roots: identical across ${[...runs.keys()].join(", ")} on all ${n} hosts (path, type, mode, owner, sha256/link target)`
      : `managed roots: NOT verified${rootProblems.length ? `\n  ${rootProblems.slice(0, 10).join("\n  ")}` : " (a tool did not finish)"}`,
  );
  for (const [t, r] of runs) if (r.error) console.log(`${t} FAILED: ${r.error}`);
  console.log("");
  if (rootProblems.length > 0 || !verified || [...runs.values()].some((r) => r.error)) broken = true;
  report.push({
    hosts: n,
    loadavg: loadavg(),
    tools: Object.fromEntries(
      [...runs].map(([t, r]) => [t, { phases: r.phases, error: r.error ?? null, note: r.note }]),
    ),
    verdicts: Object.fromEntries(rows.map((r) => [r.phase, verdict(r.figures)])),
    rootsIdentical: rootProblems.length === 0 && verified,
    rootProblems,
  });
}

const resultsDir = fileURLToPath(new URL("./results/", import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `peers-${new Date().toISOString().replaceAll(":", "-")}.json`);
writeFileSync(file, `${JSON.stringify({ tools: opts.tools, runs: report }, null, 2)}\n`);
console.log(`raw figures: ${file}`);
if (broken) console.log(`bench broken (a tool failed or the work differed); work dirs kept in ${base}`);
else rmSync(base, { recursive: true, force: true });
process.exit(broken ? 1 : 0);
