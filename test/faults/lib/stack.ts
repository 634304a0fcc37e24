// Every service as a real process on the scenario's NATS and database, plus approved agents tagged
// fault=on that report metrics every second, so the load has something live to act on.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually, freePort, startSystem } from "@orch/kit/testing";
import { agentPool } from "../../../services/agents/test/harness.js";
import type { AgentSpawner, FaultAgent, FaultStack, FaultStackOptions } from "./types.js";

/** Start order: what others call comes first; the gateway, the front door, last. */
export const FAULT_SERVICES = ["auth", "agents", "secrets", "state", "audit", "notify", "terminal", "gateway"];

/** Local orch-agent processes (agentPool) with a short metrics interval. */
export const localAgents: AgentSpawner = async ({ linkPort, count }) => {
  const pool = agentPool();
  const procs = Array.from({ length: count }, () =>
    pool.spawn(["--server", `127.0.0.1:${linkPort}`, "--metrics-interval", "1", "--log-level", "info"]),
  );
  const agents = await Promise.all(
    procs.map(async (p) => ({ nodeId: await p.nodeId(), kill: (sig: NodeJS.Signals = "SIGKILL") => p.signal(sig) })),
  ).catch(async (err) => {
    await pool.stop();
    throw err;
  });
  return { agents, stop: () => pool.stop() };
};

export async function startFaultStack(o: FaultStackOptions): Promise<FaultStack> {
  const dir = mkdtempSync(join(tmpdir(), `orch-fault-${o.name}-`));
  const linkPort = await freePort();
  // startSystem stops what it started when it throws; the scratch directory is this function's.
  const system = await startSystem({
    nats: o.nats,
    db: o.db,
    services: FAULT_SERVICES,
    readyTimeoutMs: 60_000,
    env: {
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_AGENTS_LINK_PORT: String(linkPort),
      ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, 0x46).toString("base64")}`,
      ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
      ORCH_TERMINAL_TRANSCRIPT_DIR: join(dir, "transcripts"),
      ORCH_LOG_LEVEL: "warn",
      ...o.env,
    },
  }).catch((err) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  let spawned: Awaited<ReturnType<AgentSpawner>> | undefined;
  const stop = async () => {
    await spawned?.stop().catch(() => {});
    await system.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const token = await system.login(system.admin);
    const api = (method: string, path: string, body?: unknown) =>
      system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
    spawned = await (o.spawnAgents ?? localAgents)({ linkPort, count: o.agents ?? 4 });
    const agents: FaultAgent[] = [];
    for (const [i, a] of spawned.agents.entries()) {
      const name = `fault-${i + 1}`;
      await eventually(async () => (await api("GET", `/agents/${a.nodeId}`)).body?.connected === true, 30_000);
      const ok = await api("POST", `/agents/${a.nodeId}`, { status: "approved", name });
      if (ok.status !== 200) throw new Error(`approve ${name}: ${ok.status} ${ok.text}`);
      const tagged = await api("PUT", `/agents/${a.nodeId}/tags`, { tags: { fault: "on", slot: name } });
      if (tagged.status !== 200) throw new Error(`tag ${name}: ${tagged.status} ${tagged.text}`);
      agents.push({ ...a, name });
    }
    // The metrics reads of the load need a first sample from every agent.
    for (const a of agents)
      await eventually(
        async () => (await api("GET", `/agents/${a.nodeId}/metrics/latest`)).status === 200,
        30_000,
        200,
      );
    return {
      system,
      token,
      agents,
      services: [...FAULT_SERVICES],
      async restartService(name) {
        if (!FAULT_SERVICES.includes(name)) throw new Error(`unknown service ${name}`);
        await system.kill(name, "SIGKILL"); // a no-op when the scenario already killed it
        await system.start(name);
        await waitStatusOk(system.url, 60_000);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Until GET /status answers 200 with every service ok (each ping takes at most 1 s). */
export async function waitStatusOk(url: string, timeoutMs: number): Promise<void> {
  let last = "";
  try {
    await eventually(
      async () => {
        const r = await fetch(`${url}/api/v1/status`, { signal: AbortSignal.timeout(5_000) });
        last = await r.text();
        return r.status === 200 && (JSON.parse(last) as { status: string }).status === "ok";
      },
      timeoutMs,
      100,
    );
  } catch (err) {
    throw new Error(`status not ok within ${timeoutMs} ms: ${last}`, { cause: err });
  }
}
