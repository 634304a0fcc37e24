import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectNats, type NatsConnection } from "../nats.js";
import { createTestBus, type BusCredentials } from "./bus.js";
import { freePort, waitForPort } from "./ports.js";

export interface NatsClusterNode {
  /** server_name, as stream info's cluster.leader reports it (nats-0, nats-1, ...). */
  name: string;
  port: number;
  url: string;
  clusterPort: number;
  monitorPort: number;
  /** The process runs (a paused node is alive). */
  readonly alive: boolean;
  readonly paused: boolean;
  /** Sends a signal; SIGKILL/SIGTERM/SIGINT wait for the exit. The store is kept. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the node again on its ports and store (no-op when it runs). */
  start(): Promise<void>;
  /** SIGSTOP: the process holds its sockets but answers nothing, like a frozen VM. */
  pause(): void;
  resume(): void;
  /** The last lines the server logged, and how it exited. */
  log(): string[];
}

export interface NatsClusterHandle {
  /** Every node's client URL, comma-separated, as NATS_URL takes it. */
  url: string;
  urls: string[];
  nodes: NatsClusterNode[];
  node(name: string): NatsClusterNode;
  /** A client of the whole cluster (closed by stop()); bus users as NatsHandle.connect. */
  connect(name?: string): Promise<NatsConnection>;
  /** The user a client named `name` connects as (as NatsHandle.credentials). */
  credentials(name: string): BusCredentials;
  /** ORCH_NATS_USER / ORCH_NATS_PASSWORD for a service process. */
  busEnv(service: string): Record<string, string>;
  /** The server name of the stream's RAFT leader as a running, unpaused node sees it; undefined without one. */
  streamLeader(stream: string): Promise<string | undefined>;
  /** Waits for the stream to have a leader (other than `except`, e.g. the node just killed). */
  waitForLeader(stream: string, timeoutMs?: number, opts?: { except?: string }): Promise<string>;
  /** Waits until JetStream's meta group has a leader that every running node agrees on. */
  waitForMetaLeader(timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const NATS_BIN = process.env.NATS_SERVER_BIN ?? "nats-server";

/**
 * One node's configuration: deploy/k8s/components/nats/nats.conf with local addresses and a private
 * store. What differs, and why:
 * - `sync_interval: always` is left out: nats-server 2.9 rejects the field (added in 2.10), so
 *   the store is fsynced on its own schedule and a node's acked writes survive a kill of that
 *   node only because the other replicas have them.
 * - `include ./bus.conf` instead of `./accounts.conf`: the same users with the test harness's
 *   random passwords and its test user (./bus.ts).
 * - no pid_file: processes are tracked by the child handles.
 * - `ping_interval: "3s"` / `ping_max: 2`: how fast a node drops a frozen peer (SIGSTOP, a
 *   stalled VM) and the client interest behind it, which the production nats.conf needs as well.
 *   With the 2-minute default, the other nodes keep for minutes the route to a frozen node and the
 *   queue subscriptions its clients held there, and a request from any node picks them at random
 *   among the live members: a share of the RPCs times out long after the services moved. Before
 *   2.9.16 (nats-server#4014, fixed by #4016) a route is not pinged while the node still sends on
 *   it, so on 2.9.10 a node that leads a RAFT group with the frozen node as a peer (heartbeats
 *   every second) keeps that route; later servers ping routes regardless and drop it after
 *   (ping_max + 1) x ping_interval.
 */
function nodeConfig(
  n: { name: string; port: number; clusterPort: number; monitorPort: number; store: string },
  routes: string[],
): string {
  return `server_name: ${n.name}
listen: 127.0.0.1:${n.port}
http: 127.0.0.1:${n.monitorPort}
max_payload: 8MB
max_connections: 4096
write_deadline: 10s
ping_interval: "3s"
ping_max: 2
lame_duck_duration: 30s
lame_duck_grace_period: 10s
include ./bus.conf
jetstream {
  store_dir: "${n.store}"
  max_memory_store: 256MB
  max_file_store: 8GB
}
cluster {
  name: orch
  listen: 127.0.0.1:${n.clusterPort}
  # Each node ignores the route to itself, as in the StatefulSet.
  routes: [
${routes.map((r) => `    ${r}`).join("\n")}
  ]
  connect_retries: 120
}
`;
}

interface Jsz {
  server_name?: string;
  meta_cluster?: { leader?: string; cluster_size?: number };
}

async function monitorJson<T>(port: number, path: string): Promise<T | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(1000) });
    return res.ok ? ((await res.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

/** What one node's monitor says of the meta group and the stream (for failure messages). */
async function streamView(n: NatsClusterNode, stream: string): Promise<string> {
  const jsz = await monitorJson<
    Jsz & { account_details?: Array<{ stream_detail?: Array<{ name: string; cluster?: { leader?: string } }> }> }
  >(n.monitorPort, "/jsz?streams=true");
  const s = (jsz?.account_details ?? []).flatMap((a) => a.stream_detail ?? []).find((x) => x.name === stream);
  return `${n.name}: meta leader ${jsz?.meta_cluster?.leader ?? "?"}, ${stream} leader ${s?.cluster?.leader ?? "?"}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface NodeSpec {
  name: string;
  port: number;
  clusterPort: number;
  monitorPort: number;
  store: string;
  conf: string;
}

/** One node of the cluster, from its ports, store and written configuration; started by start(). */
function clusterNode(s: NodeSpec): NatsClusterNode {
  let child: ChildProcess | undefined;
  let paused = false;
  const logTail: string[] = [];
  const running = () => !!child && child.exitCode === null && child.signalCode === null;
  const node: NatsClusterNode = {
    name: s.name,
    port: s.port,
    url: `nats://127.0.0.1:${s.port}`,
    clusterPort: s.clusterPort,
    monitorPort: s.monitorPort,
    get alive() {
      return running();
    },
    get paused() {
      return paused && running();
    },
    async kill(signal = "SIGKILL") {
      const c = child;
      if (!c || !running()) return;
      const exits = signal === "SIGKILL" || signal === "SIGTERM" || signal === "SIGINT";
      const exited = exits ? new Promise<void>((resolve) => c.once("exit", () => resolve())) : undefined;
      c.kill(signal);
      // A stopped process only acts on SIGKILL; let it see SIGTERM too.
      if (paused && signal !== "SIGKILL" && exits) c.kill("SIGCONT");
      if (exits) paused = false;
      await exited;
    },
    async start() {
      if (running()) return;
      paused = false;
      const c = spawn(NATS_BIN, ["-c", s.conf], { stdio: ["ignore", "ignore", "pipe"] });
      child = c;
      // The server logs to stderr; the tail explains an exit nobody asked for.
      c.stderr?.setEncoding("utf8").on("data", (d: string) => {
        logTail.push(...d.split("\n").filter(Boolean));
        logTail.splice(0, Math.max(0, logTail.length - 40));
      });
      c.once("exit", (code, signal) =>
        logTail.push(`exited at ${new Date().toISOString()}: code ${code} signal ${signal}`),
      );
      await waitForPort(s.port, 15_000);
    },
    log: () => [...logTail],
    pause() {
      if (!running() || paused) return;
      child?.kill("SIGSTOP");
      paused = true;
    },
    resume() {
      if (!running() || !paused) return;
      child?.kill("SIGCONT");
      paused = false;
    },
  };
  return node;
}

/** Free ports and an empty store for each of `size` nodes, under `dir`. */
async function nodeSpecs(dir: string, size: number): Promise<NodeSpec[]> {
  const specs: NodeSpec[] = [];
  for (let i = 0; i < size; i++) {
    const [port, clusterPort, monitorPort] = [await freePort(), await freePort(), await freePort()];
    const name = `nats-${i}`;
    const store = join(dir, name);
    mkdirSync(store);
    specs.push({ name, port, clusterPort, monitorPort, store, conf: join(dir, `${name}.conf`) });
  }
  return specs;
}

/**
 * A private JetStream cluster for one test file (default 3 nodes): own ports, stores and config
 * files, routes between all nodes. Resolves once the meta group has elected a leader, so streams
 * can be created with num_replicas up to `size`.
 */
export async function startNatsCluster(opts: { size?: number } = {}): Promise<NatsClusterHandle> {
  const size = opts.size ?? 3;
  const dir = mkdtempSync(join(tmpdir(), "orch-nats-cluster-"));
  const specs = await nodeSpecs(dir, size);
  const routes = specs.map((s) => `nats://127.0.0.1:${s.clusterPort}`);
  // bus.conf sits next to the node configurations that include it.
  const bus = createTestBus(dir);
  for (const s of specs) writeFileSync(s.conf, nodeConfig(s, routes));

  const clients: NatsConnection[] = [];
  const nodes = specs.map(clusterNode);

  const reachable = () => nodes.filter((n) => n.alive && !n.paused);

  const handle: NatsClusterHandle = {
    url: nodes.map((n) => n.url).join(","),
    urls: nodes.map((n) => n.url),
    nodes,
    node(name) {
      const n = nodes.find((x) => x.name === name);
      if (!n) throw new Error(`no node ${name} (nodes: ${nodes.map((x) => x.name).join(", ")})`);
      return n;
    },
    credentials: (name) => bus.credentials(name),
    busEnv: (service) => bus.serviceEnv(service),
    async connect(name = "test") {
      const nc = await connectNats({ url: handle.url, name, ...bus.credentials(name) });
      clients.push(nc);
      return nc;
    },
    async streamLeader(stream) {
      // Asked of one reachable node at a time over a short-lived connection: a shared client could
      // be attached to the node a test just paused and hang until its ping timeout.
      for (const n of reachable()) {
        let nc: NatsConnection | undefined;
        try {
          nc = await connectNats({ url: n.url, name: "cluster-probe", ...bus.credentials("cluster-probe") });
          const jsm = await jetstreamManager(nc, { timeout: 2000 });
          const leader = (await jsm.streams.info(stream)).cluster?.leader;
          if (leader) return leader;
        } catch {
          // No leader yet, or this node cannot reach the meta leader: try the next one.
        } finally {
          await nc?.close().catch(() => {});
        }
      }
      return undefined;
    },
    async waitForLeader(stream, timeoutMs = 30_000, o = {}) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const leader = await handle.streamLeader(stream);
        if (leader && leader !== o.except) return leader;
        if (Date.now() > until) {
          const seen = await Promise.all(reachable().map((n) => streamView(n, stream)));
          throw new Error(
            `stream ${stream} has no leader${o.except ? ` other than ${o.except}` : ""} after ${timeoutMs} ms (${seen.join("; ")})`,
          );
        }
        await sleep(200);
      }
    },
    async waitForMetaLeader(timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const views = await Promise.all(reachable().map((n) => monitorJson<Jsz>(n.monitorPort, "/jsz")));
        const leaders = new Set(views.map((v) => v?.meta_cluster?.leader ?? ""));
        const [leader] = leaders;
        if (views.length > 0 && leaders.size === 1 && leader) return leader;
        if (Date.now() > until)
          throw new Error(`no JetStream meta leader after ${timeoutMs} ms: ${[...leaders].join(",")}`);
        await sleep(100);
      }
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await Promise.all(nodes.map((n) => n.kill("SIGKILL")));
      rmSync(dir, { recursive: true, force: true });
    },
    [Symbol.asyncDispose]: () => handle.stop(),
  };

  // A test process that dies before its teardown must not leave three servers behind.
  const orphans = () => {
    for (const n of nodes) if (n.alive) void n.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", orphans);
  const stop = handle.stop;
  handle.stop = async () => {
    process.off("exit", orphans);
    await stop();
  };

  try {
    await Promise.all(nodes.map((n) => n.start()));
    await handle.waitForMetaLeader(30_000);
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
}
