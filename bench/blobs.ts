/**
 * npm run bench -- blobs [--mib 500] [--agents 20]
 *
 * A blob of --mib MiB (random bytes: nothing compresses) uploaded once through the API, then
 * written by a `file` resource with `source:` on --agents real orch-agents by one assignment apply:
 * the state service ships it over the agent link into every agent's cache first. Then the same
 * apply again, which must send nothing. Prints the upload and delivery throughput, the bytes the
 * state service says it sent, and the peak RSS growth and CPU of the gateway, state and agents
 * services over their idle baseline. The goal: the gateway's and the agents service's
 * growth under 100 MiB each, for any blob size (nothing holds a whole blob, and the buffers a
 * transfer leaves behind are collected as it goes: kit/bulk-pacer.ts); the state service's is
 * printed beside them. Real processes (run `npm run build` first), a private NATS and database.
 * Tiny run (CI): --mib 8 --agents 2.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import type { Actor } from "@orch/kit";
import { createTestDatabase, eventually, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../services/agents/test/harness.js";
import { approveTagged } from "./lib/approve-tagged.js";
import { cpuSeconds } from "./lib/proc-cpu.js";
import { rssMiB } from "./lib/soak-procs.js";

const { values } = parseArgs({
  options: { mib: { type: "string", default: "500" }, agents: { type: "string", default: "20" } },
});
const MIB = Number(values.mib);
const N = Number(values.agents);
if (!Number.isInteger(MIB) || MIB < 1 || MIB > 1024) throw new Error("--mib must be an integer in 1..1024");
if (!Number.isInteger(N) || N < 1 || N > 200) throw new Error("--agents must be an integer in 1..200");
const GOAL_RSS_MIB = 100;
/** The processes the RSS goal is about: the ones every byte of an upload or a delivery crosses. */
const GOAL_PROCESSES = new Set(["gateway", "agents"]);
const ACTOR: Actor = { id: "blobs-bench", name: "blobs-bench", type: "operator", role: "admin" };
const progress = (msg: string) => process.stderr.write(`bench blobs: ${msg}\n`);

/** The largest RSS each watched process reached while sampling, every 50 ms. */
function rssPeaks(pids: Record<string, number>) {
  const peak: Record<string, number> = {};
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) peak[name] = Math.max(peak[name] ?? 0, rssMiB(pid) ?? 0);
  };
  sample();
  const timer = setInterval(sample, 50);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** Writes --mib MiB of random bytes to `file` a MiB at a time; returns its digest. */
async function makeBlob(file: string): Promise<string> {
  const hash = createHash("sha256");
  const out = createWriteStream(file);
  for (let i = 0; i < MIB; i++) {
    const chunk = randomBytes(1024 * 1024);
    hash.update(chunk);
    if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
  return `sha256:${hash.digest("hex")}`;
}

/** PUT of the file as a stream with its Content-Length; resolves to the status and body. */
function putBlob(url: string, token: string, file: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "PUT",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/octet-stream",
          "content-length": String(MIB * 1024 * 1024),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    pipeline(createReadStream(file), req).catch(reject);
  });
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "orch-bench-blobs-"));
  const nats = await startNats();
  const db = await createTestDatabase("orch_bench");
  const system = await startSystem({
    nats,
    db,
    services: ["auth", "agents", "state", "gateway"],
    env: { ORCH_LOG_LEVEL: "info", ORCH_AGENTS_LINK_HOST: "127.0.0.1", ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0" },
  });
  const agents = agentPool();
  const nc = await nats.connect("blobs-bench");
  // Once, whether a signal or the end of the run comes first (both call it).
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await agents.stop();
      await nc.close();
      await system.stop();
      await db.drop();
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    })());
  for (const sig of ["SIGINT", "SIGTERM"] as const)
    process.once(sig, () => void cleanup().finally(() => process.exit(130)));
  try {
    await run(dir, system, agents, nc);
  } finally {
    await cleanup();
  }
}

type System = Awaited<ReturnType<typeof startSystem>>;

async function run(
  dir: string,
  system: System,
  agents: ReturnType<typeof agentPool>,
  nc: Awaited<ReturnType<Awaited<ReturnType<typeof startNats>>["connect"]>>,
) {
  const token = await system.login(system.admin);
  const api = (method: string, path: string, body?: unknown) =>
    system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
  progress(`${N} agents`);
  const procs = Array.from({ length: N }, (_, i) =>
    agents.spawn(["--server", `127.0.0.1:${system.linkPort}`, "--no-terminal", "--log-level", "info"], {
      dataDir: join(dir, `agent-${i}`),
    }),
  );
  const nodeIds = await Promise.all(procs.map((p) => p.nodeId(120_000)));
  for (const id of nodeIds)
    await eventually(async () => (await api("GET", `/agents/${id}`)).body?.connected === true, 120_000, 200);
  await approveTagged(nc, nodeIds, ACTOR, (i) => ({ blobs: "on", slot: `a${i}` }));

  progress(`a ${MIB} MiB blob`);
  const file = join(dir, "blob.bin");
  const digest = await makeBlob(file);
  const pids: Record<string, number> = {};
  for (const name of ["gateway", "state", "agents"]) pids[name] = system.procs.get(name)!.child.pid!;
  await new Promise((r) => setTimeout(r, 1000));
  const baseline = rssPeaks(pids).stop();
  const peaks = rssPeaks(pids);
  const cpu0 = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));

  progress("upload");
  const t0 = performance.now();
  const up = await putBlob(new URL(`/api/v1/blobs/${digest}`, system.url).href, token, file);
  const uploadS = (performance.now() - t0) / 1000;
  if (up.status !== 201) throw new Error(`upload: ${up.status} ${up.text}`);

  const content = [
    "name: blob-bench",
    "resources:",
    "  - id: bin",
    "    type: file",
    `    path: ${dir}/{{ tags.slot }}.bin`,
    `    source: ${digest}`,
    "",
  ].join("\n");
  for (const [path, body] of [
    ["/modules", { name: "blob-bench", content }],
    ["/assignments", { name: "blob-bench", selector: "blobs=on", modules: ["blob-bench"] }],
  ] as const) {
    const r = await api("POST", path, body);
    if (r.status !== 201) throw new Error(`${path}: ${r.status} ${r.text}`);
  }
  const sentBytes = () =>
    system
      .output()
      .split("\n")
      .filter((l) => l.includes("blobs sent to the agent's cache"))
      .reduce((sum, l) => sum + Number(/"bytes":(\d+)/.exec(l)?.[1] ?? 0), 0);
  const apply = async () => {
    const t = performance.now();
    // The test client gives up after 30 s: wait less, then follow the run.
    let r = await api("POST", "/assignments/blob-bench/apply?wait=20", {});
    // A large blob to many agents may outlast one wait: follow the run until it ends.
    const runId = r.body?.run_id as string;
    while (r.status === 202 || (r.status === 200 && r.body.status === "running")) {
      await new Promise((ok) => setTimeout(ok, 1000));
      r = await api("GET", `/assignments/blob-bench/runs/${runId}`);
    }
    if (r.status !== 200 || r.body.status !== "completed" || r.body.failures !== 0)
      throw new Error(`apply: ${r.status} ${r.text.slice(0, 2000)}`);
    return (performance.now() - t) / 1000;
  };
  progress(`apply to ${N} agents`);
  const firstS = await apply();
  const firstSent = sentBytes();
  progress("apply again");
  const againS = await apply();
  const againSent = sentBytes() - firstSent;
  const peak = peaks.stop();
  const cpu = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid) - cpu0[name]!]));

  const mib = (b: number) => (b / 1024 / 1024).toFixed(1);
  const load = loadavg().map((l) => l.toFixed(2));
  console.log(`blobs bench: a ${MIB} MiB blob to ${N} agents; load average ${load.join(" ")}`);
  console.log(`upload (PUT, streamed)      ${uploadS.toFixed(2)} s  ${(MIB / uploadS).toFixed(1)} MiB/s`);
  console.log(
    `first apply                 ${firstS.toFixed(2)} s  ${mib(firstSent)} MiB sent  ${(firstSent / 1024 / 1024 / firstS).toFixed(1)} MiB/s to the fleet`,
  );
  console.log(`apply again (no change)     ${againS.toFixed(2)} s  ${mib(againSent)} MiB sent`);
  let met = againSent === 0 && firstSent === MIB * 1024 * 1024 * N;
  for (const name of Object.keys(pids)) {
    const growth = peak[name]! - baseline[name]!;
    if (GOAL_PROCESSES.has(name) && growth >= GOAL_RSS_MIB) met = false;
    console.log(
      `peak RSS ${name.padEnd(8)}          ${peak[name]!.toFixed(0)} MiB (idle ${baseline[name]!.toFixed(0)} MiB, +${growth.toFixed(0)} MiB)  CPU ${cpu[name]!.toFixed(1)} s`,
    );
  }
  console.log(
    `goal: every agent sent the blob once, re-apply sends 0 bytes, RSS growth of the ${[...GOAL_PROCESSES].join(" and ")} < ${GOAL_RSS_MIB} MiB each: ${met ? "met" : "NOT met"}`,
  );
}

await main();
