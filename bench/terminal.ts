/**
 * npm run bench -- terminal [--samples 1000] [--mib 50]
 *
 * Remote terminal cost, each figure beside the same on a local node-pty without the orchestrator:
 *  - keystroke echo round trip: one byte sent, the same byte received (p50/p99), through
 *    WebSocket → gateway → NATS → agents → gRPC link → orch-agent PTY (`stty raw -echo; exec cat`) and back;
 *  - sustained output throughput (MiB/s) of `cat` of a file of --mib MiB, while the terminal
 *    service records every byte into the asciicast transcript.
 * Real processes (services/*\/dist, agent/dist: run `npm run build` first), private NATS and database.
 * Goals: echo p99 < 20 ms; throughput ≥ 50% of the local PTY.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pty from "node-pty";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../services/agents/test/harness.js";
import { attach } from "../services/terminal/test/harness.js";

const { values } = parseArgs({
  options: { samples: { type: "string", default: "1000" }, mib: { type: "string", default: "50" } },
});
const SAMPLES = Number(values.samples);
const MIB = Number(values.mib);
if (!Number.isInteger(SAMPLES) || SAMPLES < 500) throw new Error("--samples must be an integer ≥ 500");
if (!(MIB > 0 && MIB <= 1024)) throw new Error("--mib must be in 1..1024");

/** The two ends a measurement needs: write bytes, get every byte that comes back. */
interface Endpoint {
  write(data: string): void;
  /** Returns a function that removes the listener. */
  onData(cb: (d: Buffer) => void): () => void;
  close(): Promise<void>;
}

const progress = (msg: string) => process.stderr.write(`bench terminal: ${msg}\n`);
/** CPU seconds (user + system) a process has used so far (Linux /proc). */
function cpuSeconds(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8")
      .slice(readFileSync(`/proc/${pid}/stat`, "utf8").lastIndexOf(")") + 2)
      .split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** Waits until `marker` (built so the echoed command line cannot contain it) has been received. */
function waitFor(ep: Endpoint, marker: string): Promise<void> {
  let tail = "";
  return new Promise((resolve) => {
    const off = ep.onData((d) => {
      tail = (tail.slice(-marker.length) + d.toString("latin1", Math.max(0, d.length - 4096))).slice(-4096);
      if (tail.includes(marker)) {
        off();
        resolve();
      }
    });
  });
}

async function echoLatency(ep: Endpoint): Promise<number[]> {
  const ready = waitFor(ep, "ECHO-READY");
  ep.write("stty raw -echo; echo ECHO-RE''ADY; exec cat\r");
  await ready;
  await sleep(200);
  let want = -1;
  let got: (() => void) | undefined;
  const off = ep.onData((d) => {
    if (want >= 0 && d.includes(want)) {
      want = -1;
      got?.();
    }
  });
  const out: number[] = [];
  for (let i = 0; i < SAMPLES + 20; i++) {
    const byte = 97 + (i % 26);
    const done = new Promise<void>((r) => (got = r));
    want = byte;
    const t0 = performance.now();
    ep.write(String.fromCharCode(byte));
    await done;
    if (i >= 20) out.push(performance.now() - t0); // the first ones warm caches and JITs up
  }
  off();
  return out.sort((a, b) => a - b);
}

async function throughput(ep: Endpoint, file: string): Promise<{ mibps: number; bytes: number; messages: number }> {
  const prompt = waitFor(ep, "SHELL-READY");
  ep.write("echo SHELL-RE''ADY\r");
  await prompt;
  let bytes = 0;
  let messages = 0;
  const off = ep.onData((d) => {
    bytes += d.length;
    messages++;
  });
  const done = waitFor(ep, "CAT-DONE");
  const t0 = performance.now();
  ep.write(`cat ${file}; echo CAT-DO''NE\r`);
  await done;
  const s = (performance.now() - t0) / 1000;
  off();
  return { mibps: bytes / 1024 / 1024 / s, bytes, messages };
}

function localPty(): Endpoint {
  const p = pty.spawn("/bin/bash", [], {
    name: "xterm-256color",
    cols: 120,
    rows: 40,
    cwd: tmpdir(),
    env: { ...process.env, TERM: "xterm-256color" } as Record<string, string>,
    encoding: null,
  });
  const exited = new Promise<void>((r) => p.onExit(() => r()));
  return {
    write: (s) => p.write(s),
    onData: (cb) => {
      const d = p.onData((x) => cb(x as unknown as Buffer));
      return () => d.dispose();
    },
    async close() {
      p.kill("SIGKILL");
      await exited;
    },
  };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "orch-bench-term-"));
  const file = join(dir, "big.txt");
  // Printable text (base64 lines): what `cat` of a log looks like, no terminal control sequences.
  const line = 76;
  const lines = Math.ceil((MIB * 1024 * 1024) / (line + 1));
  const chunk: string[] = [];
  for (let i = 0; i < lines; i++) chunk.push(randomBytes(57).toString("base64"));
  writeFileSync(file, `${chunk.join("\n")}\n`);

  const nats = await startNats();
  const db = await createTestDatabase("orch_bench");
  const linkPort = await freePort();
  const system = await startSystem({
    nats,
    db,
    services: ["auth", "agents", "terminal", "gateway"],
    env: {
      ORCH_LOG_LEVEL: "warn",
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_AGENTS_LINK_PORT: String(linkPort),
      ORCH_TERMINAL_TRANSCRIPT_DIR: join(dir, "transcripts"),
    },
  });
  const agents = agentPool();
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    await agents.stop();
    await system.stop();
    await db.drop();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  for (const sig of ["SIGINT", "SIGTERM"] as const)
    process.once(sig, () => void cleanup().finally(() => process.exit(130)));
  try {
    const token = await system.login(system.admin);
    const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/bash"]);
    const nodeId = await agent.nodeId();
    await eventually(
      async () => (await system.api("GET", `/api/v1/agents/${nodeId}`, { token })).body?.connected === true,
      30_000,
    );
    await system.api("POST", `/api/v1/agents/${nodeId}`, { token, body: { status: "approved", name: "bench-1" } });

    const remote = async (): Promise<Endpoint> => {
      const o = await system.api("POST", "/api/v1/terminal/bench-1?cols=120&rows=40", { token });
      if (o.status !== 201) throw new Error(`open: ${o.status} ${o.text}`);
      const r = await attach(o.body.ws_url, { collect: false });
      if (!r.ok) throw new Error(`attach: ${r.status}`);
      const listeners = new Set<(d: Buffer) => void>();
      r.a.ws.on("message", (d: Buffer, binary: boolean) => {
        if (binary) for (const l of listeners) l(d);
      });
      return {
        write: (s) => r.a.send(s),
        onData: (cb) => {
          listeners.add(cb);
          return () => listeners.delete(cb);
        },
        async close() {
          r.a.ws.close();
          await r.a.closed;
        },
      };
    };

    const measure = async <T>(
      make: () => Endpoint | Promise<Endpoint>,
      fn: (ep: Endpoint) => Promise<T>,
    ): Promise<T> => {
      const ep = await make();
      try {
        return await fn(ep);
      } finally {
        await ep.close();
      }
    };

    progress("echo through the orchestrator");
    const echoRemote = await measure(remote, echoLatency);
    progress("echo on a local PTY");
    const echoLocal = await measure(localPty, echoLatency);
    // One unmeasured pass each first, as the gateway bench warms up: a fresh process has not yet
    // optimised its bulk-output paths (only the echo's small messages ran so far), and sustained
    // output is what is measured here.
    progress("throughput warm-up (orchestrator, then local PTY)");
    await measure(remote, (ep) => throughput(ep, file));
    await measure(localPty, (ep) => throughput(ep, file));
    progress("throughput through the orchestrator");
    const pids: Record<string, number | undefined> = { agent: agent.child.pid, bench: process.pid };
    for (const [name, p] of system.procs) pids[name] = p.child.pid;
    const cpuBefore = Object.fromEntries(Object.entries(pids).map(([n, p]) => [n, cpuSeconds(p)]));
    const tpRemote = await measure(remote, (ep) => throughput(ep, file));
    const cpu = Object.entries(pids)
      .map(([n, p]) => `${n} ${(cpuSeconds(p) - cpuBefore[n]!).toFixed(1)}s`)
      .join(", ");
    progress("throughput on a local PTY");
    const tpLocal = await measure(localPty, (ep) => throughput(ep, file));

    const row = (name: string, o: number, l: number, unit: string) =>
      `${name.padEnd(26)} ${o.toFixed(2).padStart(10)} ${unit.padEnd(6)} ${l.toFixed(2).padStart(10)} ${unit.padEnd(6)} ${(o / l).toFixed(2).padStart(8)}x`;
    console.log(
      `terminal bench: ${SAMPLES} echo samples, cat of ${MIB} MiB (${tpRemote.bytes} bytes through the terminal)`,
    );
    console.log(
      `${"".padEnd(26)} ${"orchestrator".padStart(17)} ${"local node-pty".padStart(17)} ${"ratio".padStart(9)}`,
    );
    console.log(row("echo p50", pct(echoRemote, 50), pct(echoLocal, 50), "ms"));
    console.log(row("echo p99", pct(echoRemote, 99), pct(echoLocal, 99), "ms"));
    console.log(row("echo max", echoRemote.at(-1)!, echoLocal.at(-1)!, "ms"));
    console.log(row("cat throughput", tpRemote.mibps, tpLocal.mibps, "MiB/s"));
    console.log(
      `CPU during the orchestrated cat: ${cpu}; ${tpRemote.messages} WebSocket messages (local PTY: ${tpLocal.messages} reads)`,
    );
    const p99 = pct(echoRemote, 99);
    const share = tpRemote.mibps / tpLocal.mibps;
    console.log(`goal echo p99 < 20 ms: ${p99 < 20 ? "met" : "NOT met"} (${p99.toFixed(2)} ms)`);
    console.log(`goal throughput >= 50% of local: ${share >= 0.5 ? "met" : "NOT met"} (${(share * 100).toFixed(0)}%)`);
  } finally {
    await cleanup();
  }
}

await main();
