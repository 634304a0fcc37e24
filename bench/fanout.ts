/**
 * npm run bench -- fanout [--agents 500] [--resources 20] [--exec-ms 20] [--concurrency 50]
 *
 * Assignment fan-out at fleet scale: one agents-service process and one state-service process
 * (their dist/main.js, a fresh database, a private nats-server) and a load-generator child
 * (bench/lib/sim-state-agent.ts) holding N real gRPC agent links that answer
 * AgentStateService.Execute after `--exec-ms` of simulated work. A module of `--resources`
 * resources is assigned to all N (selector `env=bench`); the bench reports, for an apply, a plan
 * and a second (no-change) apply, the time from the RunAssignment call until every operation
 * finished, and operations per second. Goal: 500 agents applied in < 10 s.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { StateService, type AssignmentRun } from "@orch/contracts";
import { rpcClient, type Actor, type NatsConnection } from "@orch/kit";
import {
  createTestDatabase,
  freePort,
  startNats,
  waitForPort,
  type DbHandle,
  type NatsHandle,
} from "@orch/kit/testing";
import { approveTagged } from "./lib/approve-tagged.js";
import { children, stopChildren } from "./lib/children.js";
import { intOptions } from "./lib/int-options.js";
import { forkLinkFleet, linksUp, type LinkFleet } from "./lib/link-fleet.js";
import type { StateCounters } from "./lib/sim-state-agent.js";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SIM = fileURLToPath(new URL("./lib/sim-state-agent.ts", import.meta.url));
const ACTOR: Actor = { id: "bench", name: "bench", type: "operator", role: "admin" };

const {
  agents: N,
  resources: R,
  "exec-ms": execMs,
  concurrency,
} = intOptions("fanout", {
  agents: { default: 500, min: 1, max: 20_000 },
  resources: { default: 20, min: 1, max: 500 },
  "exec-ms": { default: 20, min: 0, max: 60_000 },
  concurrency: { default: 50, min: 1, max: 10_000 },
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A service from its dist/main.js; resolves once it answers its ping subject. */
async function startService(
  name: string,
  nats: NatsHandle,
  db: DbHandle,
  nc: NatsConnection,
  env: Record<string, string>,
) {
  const output: string[] = [];
  const child = spawn(process.execPath, [`${ROOT}services/${name}/dist/main.js`], {
    env: {
      ...process.env,
      NATS_URL: nats.url,
      DATABASE_URL: db.url,
      ORCH_HEALTH_PORT: "0",
      ORCH_HEALTH_HOST: "127.0.0.1",
      ORCH_LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  for (let i = 0; ; i++) {
    try {
      await nc.request(`orch.${name}._ping`, new Uint8Array(), { timeout: 500 });
      return { child, output };
    } catch {
      if (child.exitCode !== null || i > 120)
        throw new Error(`${name} did not start:\n${output.join("").slice(-2000)}`);
      await sleep(250);
    }
  }
}

function moduleYaml(): string {
  const lines = ["name: bench-web", "description: a 20-resource module for the fan-out bench", "resources:"];
  for (let i = 0; i < R; i++) {
    if (i % 5 === 0) lines.push(`  - { id: dir-${i}, type: directory, path: /srv/bench/d${i} }`);
    else if (i % 5 === 4)
      lines.push(
        `  - { id: run-${i}, type: exec, command: 'true', creates: /srv/bench/done-${i}, requires: [file-${i - 1}] }`,
      );
    else
      lines.push(
        `  - { id: file-${i}, type: file, path: /srv/bench/d${i - (i % 5)}/f${i}.conf, content: "host={{ attributes.hostname }} i=${i}\\n", requires: [dir-${i - (i % 5)}] }`,
      );
  }
  return `${lines.join("\n")}\n`;
}

interface Row {
  kind: string;
  seconds: number;
  serverSeconds: number;
  opsPerSecond: number;
  succeeded: number;
  other: string;
  changed: number;
}

async function measure(nc: NatsConnection, db: DbHandle, kind: "apply" | "plan", label: string): Promise<Row> {
  const state = rpcClient(nc, "state", StateService, { timeoutMs: 310_000 });
  const t0 = performance.now();
  const run: AssignmentRun = await state.runAssignment(
    { name: "bench", kind, batch: "", waitSeconds: 300 },
    { actor: ACTOR },
  );
  const seconds = (performance.now() - t0) / 1000;
  if (run.status === "running") throw new Error(`${label}: still running after 300 s`);
  const byStatus = new Map<string, number>();
  for (const t of run.targets) byStatus.set(t.status, (byStatus.get(t.status) ?? 0) + 1);
  const pg = (await import("pg")).default;
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  const span = (
    await c.query(
      "SELECT max(finished_at) - $2::bigint AS ms, sum((summary->>'changed')::int) AS changed FROM state.operations WHERE run_id = $1",
      [run.id, run.createdAt],
    )
  ).rows[0];
  await c.end();
  const succeeded = byStatus.get("succeeded") ?? 0;
  byStatus.delete("succeeded");
  return {
    kind: label,
    seconds,
    serverSeconds: Number(span.ms) / 1000,
    opsPerSecond: run.targets.length / seconds,
    succeeded,
    other: [...byStatus].map(([s, n]) => `${n} ${s}`).join(", ") || "-",
    changed: Number(span.changed ?? 0),
  };
}

async function main() {
  console.error(
    `bench fanout: ${N} simulated agents, ${R}-resource module, ${execMs} ms per Execute, state.fanout_concurrency=${concurrency}`,
  );
  const nats = await startNats();
  const db = await createTestDatabase("orch_bench");
  const nc = await nats.connect("bench");
  let fleet: LinkFleet<StateCounters> | undefined;
  try {
    const linkPort = await freePort();
    // Plaintext on purpose: the simulated links (bench/lib/sim-state-agent.ts) speak it, as in earlier runs.
    await startService("agents", nats, db, nc, {
      ORCH_AGENTS_INSECURE: "true",
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_AGENTS_LINK_PORT: String(linkPort),
    });
    await waitForPort(linkPort, 30_000);
    await startService("state", nats, db, nc, {
      ORCH_STATE_FANOUT_CONCURRENCY: String(concurrency),
      ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
    });

    fleet = forkLinkFleet<StateCounters>(SIM, linkPort, N, execMs);
    const nodeIds = await linksUp(fleet, N);
    await approveTagged(nc, nodeIds, ACTOR, (i) => ({ env: "bench", role: i % 2 ? "web" : "db" }));
    console.error(`  ${N} agents approved and tagged`);

    const state = rpcClient(nc, "state", StateService, { timeoutMs: 30_000 });
    await state.uploadModule({ name: "bench-web", content: moduleYaml() }, { actor: ACTOR });
    await state.createAssignment(
      { name: "bench", selector: "env=bench,role in (web,db)", modules: ["bench-web"] },
      { actor: ACTOR },
    );

    const rows = [
      await measure(nc, db, "apply", "apply"),
      await measure(nc, db, "plan", "plan (after apply)"),
      await measure(nc, db, "apply", "apply again (no change)"),
    ];
    fleet.command({ type: "stats" });
    const stats = await fleet.next("stats", 10_000);

    console.log(
      `\nfan-out of a ${R}-resource module to ${N} simulated agents (concurrency ${concurrency}, ${execMs} ms simulated work per Execute)\n`,
    );
    console.log(
      [
        "run".padEnd(24),
        "all finished (s)".padStart(17),
        "server span (s)".padStart(16),
        "ops/s".padStart(8),
        "succeeded".padStart(10),
        "resources changed".padStart(18),
        "  other",
      ].join(""),
    );
    for (const r of rows) {
      console.log(
        [
          r.kind.padEnd(24),
          r.seconds.toFixed(2).padStart(17),
          r.serverSeconds.toFixed(2).padStart(16),
          r.opsPerSecond.toFixed(0).padStart(8),
          String(r.succeeded).padStart(10),
          String(r.changed).padStart(18),
          `  ${r.other}`,
        ].join(""),
      );
    }
    console.log(`\nExecute calls answered by the simulated agents: ${stats.executes} (${stats.resources} resources)`);
    const apply = rows[0]!;
    console.log(
      `goal: ${N} agents applied in < 10 s → ${apply.seconds.toFixed(2)} s: ${apply.seconds < 10 && apply.succeeded === N ? "met" : "NOT met"}`,
    );
  } finally {
    fleet?.command({ type: "stop" });
    stopChildren();
    await sleep(500);
    await nc.close().catch(() => {});
    await db.drop().catch(() => {});
    await nats.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench fanout: ${(err as Error).message}`);
    process.exit(1);
  },
);
