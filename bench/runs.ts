/**
 * npm run bench -- runs [--agents 1000] [--exec-ms 50] [--rounds 3] [--concurrency 1000]
 *
 * A fleet command run at fleet scale, end to end through the gateway: auth, agents, state and
 * gateway from their dist/main.js (a fresh database, a private nats-server) and a load-generator
 * child (bench/lib/sim-command-agent.ts) holding N real gRPC agent links that answer
 * AgentCommandService.RunCommand after `--exec-ms` of simulated work, having published one output
 * chunk through the link as orch-agent does. Each round POSTs /api/v1/runs `uptime` on all N
 * (selector `env=bench`), follows GET /runs/{id}/stream as `orchctl run` does, and measures the
 * time from the POST until the stream's `end` (every result in, the run final), plus the CPU
 * seconds each process used meanwhile (/proc/<pid>/stat utime+stime). Goal: 1,000 agents < 5 s.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import type { Actor } from "@orch/kit";
import { createTestDatabase, freePort, startNats, startSystem, waitForPort } from "@orch/kit/testing";
import { approveTagged } from "./lib/approve-tagged.js";
import { stopChildren } from "./lib/children.js";
import { intOptions } from "./lib/int-options.js";
import { forkLinkFleet, linksUp, type LinkFleet } from "./lib/link-fleet.js";
import type { CommandCounters } from "./lib/sim-command-agent.js";

const SIM = fileURLToPath(new URL("./lib/sim-command-agent.ts", import.meta.url));
const ACTOR: Actor = { id: "bench", name: "bench", type: "operator", role: "admin" };

const {
  agents: N,
  "exec-ms": execMs,
  rounds,
  concurrency,
} = intOptions("runs", {
  agents: { default: 1000, min: 1, max: 10_000 },
  "exec-ms": { default: 50, min: 0, max: 60_000 },
  rounds: { default: 3, min: 1, max: 100 },
  concurrency: { default: 1000, min: 1, max: 100_000 },
});

const TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process, in seconds (fields 14 and 15 of /proc/<pid>/stat, after the comm). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/** The private nats-server of this bench (its port is on its command line), for its CPU too. */
function natsPid(port: number): number | undefined {
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      if (cmd[0]?.endsWith("nats-server") && cmd.includes(String(port))) return Number(d);
    } catch {}
  }
  return undefined;
}

/** Reads a text/event-stream until `event: end`; counts events by name. */
async function follow(url: string, token: string): Promise<Map<string, number>> {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
    signal: AbortSignal.timeout(300_000),
  });
  if (res.status !== 200 || !res.body) throw new Error(`stream: ${res.status} ${await res.text()}`);
  const counts = new Map<string, number>();
  const decoder = new TextDecoder();
  let buf = "";
  for await (const bytes of res.body) {
    buf += decoder.decode(bytes, { stream: true });
    for (let end = buf.indexOf("\n\n"); end >= 0; end = buf.indexOf("\n\n")) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const name = /^event: (.*)$/m.exec(block)?.[1];
      if (!name) continue;
      counts.set(name, (counts.get(name) ?? 0) + 1);
      if (name === "end") return counts;
    }
  }
  throw new Error("stream closed before `event: end`");
}

interface Row {
  seconds: number;
  acceptedMs: number;
  counts: Record<string, number>;
  outputs: number;
  cpu: Record<string, number>;
}

async function main() {
  console.error(
    `bench runs: ${N} simulated agents, ${execMs} ms per RunCommand, state.command_concurrency=${concurrency}, ${rounds} rounds`,
  );
  const nats = await startNats();
  const db = await createTestDatabase("orch_bench");
  const nc = await nats.connect("bench");
  const linkPort = await freePort();
  let fleet: LinkFleet<CommandCounters> | undefined;
  // Plaintext link on purpose: the simulated links (bench/lib/sim-command-agent.ts) speak it.
  const system = await startSystem({
    nats,
    db,
    services: ["auth", "agents", "state", "gateway"],
    env: {
      ORCH_LOG_LEVEL: "warn",
      ORCH_AGENTS_INSECURE: "true",
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_AGENTS_LINK_PORT: String(linkPort),
      ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
      ORCH_STATE_COMMAND_CONCURRENCY: String(concurrency),
    },
    readyTimeoutMs: 60_000,
  });
  try {
    await waitForPort(linkPort, 30_000);
    fleet = forkLinkFleet<CommandCounters>(SIM, linkPort, N, execMs);
    const nodeIds = await linksUp(fleet, N);
    await approveTagged(nc, nodeIds, ACTOR, () => ({ env: "bench" }));
    console.error(`  ${N} agents approved and tagged`);

    const token = await system.login(system.admin);
    const pids: Record<string, number> = {};
    for (const name of ["gateway", "agents", "state"]) pids[name] = system.procs.get(name)!.child.pid!;
    pids["sim agents"] = fleet.child.pid!;
    const natsServer = natsPid(nats.port);
    if (natsServer) pids["nats-server"] = natsServer;

    const rows: Row[] = [];
    for (let round = 1; round <= rounds; round++) {
      const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
      const t0 = performance.now();
      const started = await system.api("POST", "/api/v1/runs", {
        token,
        body: { selector: "env=bench", command: ["uptime"], timeout_s: 60 },
      });
      const acceptedMs = performance.now() - t0;
      if (started.status !== 202) throw new Error(`POST /runs: ${started.status} ${started.text}`);
      const run = started.body as { id: string; targets: number };
      if (run.targets !== N) throw new Error(`the run targets ${run.targets} agents, not ${N}`);
      const events = await follow(`${system.url}/api/v1/runs/${run.id}/stream`, token);
      const seconds = (performance.now() - t0) / 1000;
      const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid) - before[k]!]));
      const final = await system.api("GET", `/api/v1/runs/${run.id}?output=false`, { token });
      const body = final.body as { status: string; counts: Record<string, number> };
      if (body.status !== "completed") throw new Error(`run ${run.id} ended ${body.status}`);
      const counts = Object.fromEntries(Object.entries(body.counts).filter(([, n]) => n > 0));
      rows.push({ seconds, acceptedMs, counts, outputs: events.get("output") ?? 0, cpu });
      console.error(`  round ${round}: ${seconds.toFixed(2)} s`);
    }
    fleet.command({ type: "stats" });
    const stats = await fleet.next("stats", 10_000);

    console.log(
      `\nfleet command run (uptime) on ${N} simulated agents through the gateway (${execMs} ms simulated work per RunCommand, state.command_concurrency ${concurrency})\n`,
    );
    const names = Object.keys(pids);
    console.log(
      [
        "round".padEnd(6),
        "all results (s)".padStart(16),
        "202 (ms)".padStart(9),
        "agents/s".padStart(9),
        "outputs".padStart(8),
        ...names.map((n) => `${n} CPU s`.padStart(Math.max(11, n.length + 7))),
        "  statuses",
      ].join(""),
    );
    rows.forEach((r, i) => {
      console.log(
        [
          String(i + 1).padEnd(6),
          r.seconds.toFixed(2).padStart(16),
          r.acceptedMs.toFixed(0).padStart(9),
          (N / r.seconds).toFixed(0).padStart(9),
          String(r.outputs).padStart(8),
          ...names.map((n) => r.cpu[n]!.toFixed(2).padStart(Math.max(11, n.length + 7))),
          `  ${Object.entries(r.counts)
            .map(([s, n]) => `${n} ${s}`)
            .join(", ")}`,
        ].join(""),
      );
    });
    console.log(
      `\nRunCommand calls answered by the simulated agents: ${stats.runs} (${stats.chunks} output chunks published)`,
    );
    const best = Math.min(...rows.map((r) => r.seconds));
    const ok = rows.every((r) => r.counts.succeeded === N);
    console.log(
      `goal: ${N} agents, all results in < 5 s → best ${best.toFixed(2)} s, worst ${Math.max(...rows.map((r) => r.seconds)).toFixed(2)} s: ${best < 5 && ok ? "met" : "NOT met"}`,
    );
    // Two cores: a busy machine moves every figure, so the load is part of the result.
    console.log(
      `load average (1/5/15 min): ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
  } catch (err) {
    console.error(system.output().slice(-4000));
    throw err;
  } finally {
    fleet?.command({ type: "stop" });
    stopChildren();
    await system.stop().catch(() => {});
    await nc.close().catch(() => {});
    await db.drop().catch(() => {});
    await nats.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench runs: ${(err as Error).message}`);
    process.exit(1);
  },
);
