/**
 * This project on the peers job: auth, agents, state and gateway from their dist/main.js on a
 * private nats-server and a fresh database, one real orch-agent process per host (own data dir),
 * driven through the public HTTP API as an operator would: upload the module, an assignment with
 * a selector, POST apply/plan with ?wait, and a drift check per agent. CPU = every service, agent,
 * nats-server and this database's postgres backends.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Actor } from "@orch/kit";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { spawnAgent, type AgentProcess } from "../../services/agents/test/harness.js";
import { approveTagged } from "./approve-tagged.js";
import { cpuBetween, pidsMatching, snapshot } from "./peers-cpu.js";
import { orchModule } from "./peers-orch-module.js";
import type { PeerTool, PhaseResult } from "./peers-phase.js";

const SERVICES = ["auth", "agents", "state", "gateway"];
const ACTOR: Actor = { id: "peers-bench", name: "peers-bench", type: "operator", role: "admin" };
const MODULE = "peers";
const WAIT_S = 300;

interface OpJson {
  node_id: string;
  status: string;
  summary: { changed: number; failed: number };
  error?: string | null;
}

export async function orchTool(dir: string, hosts: string[]): Promise<PeerTool> {
  const base = join(dir, "roots");
  const roots = new Map(hosts.map((h) => [h, join(base, h)]));
  for (const r of roots.values()) mkdirSync(r, { recursive: true, mode: 0o755 });
  for (const h of hosts) mkdirSync(join(dir, "agents", h), { recursive: true });
  const nats = await startNats();
  const db = await createTestDatabase("orch_peers");
  const linkPort = await freePort();
  const agents: AgentProcess[] = [];
  let system: Awaited<ReturnType<typeof startSystem>> | undefined;
  const stop = async () => {
    await Promise.all(agents.map((a) => a.signal("SIGKILL")));
    await system?.stop();
    await db.drop();
    await nats.stop();
  };
  try {
    system = await startSystem({
      nats,
      db,
      services: SERVICES,
      readyTimeoutMs: 120_000,
      env: {
        ORCH_AGENTS_LINK_HOST: "127.0.0.1",
        ORCH_AGENTS_LINK_PORT: String(linkPort),
        // Only the checks the bench asks for: no scheduled drift check in the middle of a phase.
        ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
        ORCH_LOG_LEVEL: "warn",
      },
    });
    const sys = system;
    for (const h of hosts)
      agents.push(
        spawnAgent(["--server", `127.0.0.1:${linkPort}`, "--log-level", "info"], {
          dataDir: join(dir, "agents", h),
        }),
      );
    const nodeIds = await Promise.all(agents.map((a) => a.nodeId(120_000)));
    const hostOf = new Map(nodeIds.map((id, i) => [id, hosts[i]!]));
    const token = await sys.login(sys.admin);
    const api = async (method: string, path: string, body?: unknown) => {
      const r = await sys.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
      return r;
    };
    for (const id of nodeIds)
      await eventually(async () => (await api("GET", `/agents/${id}`)).body?.connected === true, 120_000, 200);
    const nc = await nats.connect("peers-bench");
    await approveTagged(nc, nodeIds, ACTOR, (i) => ({ peers: "on", host: hosts[i]! }));
    const up = await api("POST", "/modules", { name: MODULE, content: orchModule(MODULE, base) });
    if (up.status !== 201) throw new Error(`module upload: ${up.status} ${up.text}`);
    const as = await api("POST", "/assignments", { name: MODULE, selector: "peers=on", modules: [MODULE] });
    if (as.status !== 201) throw new Error(`assignment: ${as.status} ${as.text}`);

    const pids = () => [
      ...[...sys.procs.values()].map((p) => p.child.pid!),
      ...agents.map((a) => a.child.pid!),
      ...pidsMatching(["nats-server", String(nats.port)]),
      ...pidsMatching(["postgres:", db.name]),
    ];
    const measured = async (work: () => Promise<Record<string, number> | string>): Promise<PhaseResult> => {
      const before = snapshot(pids());
      const t0 = performance.now();
      const out = await work();
      const wallS = (performance.now() - t0) / 1000;
      const cpuS = cpuBetween(before, snapshot(pids()));
      return typeof out === "string" ? { wallS, cpuS, changed: {}, error: out } : { wallS, cpuS, changed: out };
    };
    /** Per host, the changed count of the run's operations (read after the clock stopped). */
    const runChanges = async (runId: string): Promise<Record<string, number> | string> => {
      const ops: OpJson[] = [];
      for (let cursor = ""; ; ) {
        const r = await api(
          "GET",
          `/assignments/${MODULE}/runs/${runId}/operations?limit=100${cursor ? `&cursor=${cursor}` : ""}`,
        );
        if (r.status !== 200) return `run operations: ${r.status} ${r.text}`;
        ops.push(...(r.body.operations as OpJson[]));
        if (!r.body.has_more) break;
        cursor = encodeURIComponent(r.body.next_cursor as string);
      }
      const bad = ops.filter((o) => o.status !== "succeeded");
      if (bad.length > 0 || ops.length !== hosts.length)
        return `${ops.length}/${hosts.length} operations, not succeeded: ${bad.map((o) => `${hostOf.get(o.node_id)} ${o.status} ${o.error ?? ""}`).join("; ")}`;
      return Object.fromEntries(ops.map((o) => [hostOf.get(o.node_id) ?? o.node_id, o.summary.changed]));
    };
    const fanOut = async (kind: "apply" | "plan"): Promise<PhaseResult> => {
      let runId = "";
      const r = await measured(async () => {
        const res = await api("POST", `/assignments/${MODULE}/${kind}?wait=${WAIT_S}`, {});
        if (res.status !== 200 || res.body.status !== "completed" || res.body.failures !== 0)
          return `${kind}: ${res.status} ${res.text.slice(0, 2000)}`;
        runId = res.body.run_id as string;
        return {};
      });
      if (r.error) return r;
      const changed = await runChanges(runId);
      return typeof changed === "string" ? { ...r, error: changed } : { ...r, changed };
    };
    const drift = () =>
      measured(async () => {
        const checks = await Promise.all(nodeIds.map((id) => api("POST", `/agents/${id}/drift?wait=${WAIT_S}`)));
        const changed: Record<string, number> = {};
        for (const [i, c] of checks.entries()) {
          const host = hosts[i]!;
          if (c.status !== 200 || c.body.operation?.status !== "succeeded" || !c.body.drift)
            return `drift check of ${host}: ${c.status} ${c.text.slice(0, 1000)}`;
          changed[host] = c.body.drift.drifted ? (c.body.drift.resources as unknown[]).length : 0;
        }
        return changed;
      });
    return {
      name: "orch",
      roots,
      apply: () => fanOut("apply"),
      dryRun: () => fanOut("plan"),
      drift,
      note: `orch: ${SERVICES.join("+")} + ${hosts.length} orch-agent processes + nats-server + this database's postgres backends, through the HTTP API (client not counted); agents on loopback, not in network namespaces`,
      stop: async () => {
        await nc.close();
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
