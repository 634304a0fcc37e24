// Faults of the 3-node NATS cluster: kills of the stream leader or any node, restarts, and a node
// frozen with SIGSTOP (its sockets stay open, it answers nothing: a stalled VM or a GC pause).
import type { NatsClusterHandle, NatsClusterNode } from "@orch/kit/testing";

/**
 * The heartbeats a frozen node has to outlast:
 * - nats-server 2.9's RAFT (server/raft.go): the leader heartbeats every 1 s, a follower that has
 *   heard nothing for 4-9 s campaigns, a leader without quorum for 10 s steps down;
 * - the services' client pings (CLIENT_LIVENESS in packages/kit/src/nats.ts): two unanswered
 *   ones make a client drop the server, and a redial of the frozen server gives up after its
 *   dial timeout, so a client is on another node well within the stale time plus a few redials;
 * - the nodes' route pings (ping_interval 3 s, ping_max 2 in the cluster's config): until the
 *   other nodes drop their routes to it, a request can still be routed to the queue subscription
 *   a service held there (a 504 with Retry-After). On 2.9.10 a node does not ping a route it still
 *   sends on, so a RAFT leader with the frozen node as a peer keeps that route (nats-cluster.ts).
 * The pause is long enough for the clients to have left the frozen node and served elsewhere.
 */
export const LONG_PAUSE_MS = 40_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** SIGKILLs the stream's current leader; returns its name. */
export async function killLeader(cluster: NatsClusterHandle, stream: string): Promise<NatsClusterNode> {
  const node = cluster.node(await cluster.waitForLeader(stream, 15_000));
  await node.kill("SIGKILL");
  return node;
}

/** SIGKILLs a running node chosen at random (among those not in `except`). */
export async function killRandom(
  cluster: NatsClusterHandle,
  opts: { except?: string[]; random?: () => number } = {},
): Promise<NatsClusterNode> {
  const pool = cluster.nodes.filter((n) => n.alive && !(opts.except ?? []).includes(n.name));
  const node = pool[Math.floor((opts.random ?? Math.random)() * pool.length)];
  if (!node) throw new Error("no running node left to kill");
  await node.kill("SIGKILL");
  return node;
}

/**
 * Starts the nodes again and waits until the stream has every replica current, i.e. the
 * restarted nodes caught up from the survivors. Returns how long that took.
 */
export async function restartAndCatchUp(
  cluster: NatsClusterHandle,
  nodes: NatsClusterNode[],
  stream: string,
  timeoutMs = 60_000,
): Promise<number> {
  const from = Date.now();
  await Promise.all(nodes.map((n) => n.start()));
  await cluster.waitForMetaLeader(timeoutMs);
  await waitReplicasCurrent(cluster, stream, Math.max(1000, timeoutMs - (Date.now() - from)));
  return Date.now() - from;
}

/** Until the stream reports a leader plus size-1 followers that are current and online. */
export async function waitReplicasCurrent(
  cluster: NatsClusterHandle,
  stream: string,
  timeoutMs: number,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    last = await replicaState(cluster, stream);
    if (last === "ok") return;
    if (Date.now() > until) throw new Error(`stream ${stream} replicas not current after ${timeoutMs} ms: ${last}`);
    await sleep(250);
  }
}

async function replicaState(cluster: NatsClusterHandle, stream: string): Promise<string> {
  const reachable = cluster.nodes.filter((n) => n.alive && !n.paused);
  if (reachable.length === 0)
    return `no running node (${cluster.nodes.map((n) => `${n.name}: ${n.log().slice(-3).join(" / ")}`).join("; ")})`;
  // Only the leader knows whether its followers are current; a follower reports stale flags.
  const views = await Promise.all(reachable.map((n) => streamCluster(n, stream)));
  const own = views.find((c, i) => c?.leader === reachable[i]!.name);
  if (!own) return `no node reports itself leader (${views.map((c) => c?.leader ?? "?").join(",")})`;
  const current = (own.replicas ?? []).filter((p) => p.current && !p.offline);
  return current.length === cluster.nodes.length - 1
    ? "ok"
    : `leader ${own.leader}, current: ${current.map((p) => p.name).join(",")}`;
}

async function streamCluster(n: NatsClusterNode, stream: string): Promise<StreamCluster | undefined> {
  const res = await fetch(`http://127.0.0.1:${n.monitorPort}/jsz?streams=true`, {
    signal: AbortSignal.timeout(2000),
  }).catch(() => undefined);
  if (!res?.ok) return undefined;
  const jsz = (await res.json()) as {
    account_details?: Array<{ stream_detail?: Array<{ name: string; cluster?: StreamCluster }> }>;
  };
  return (jsz.account_details ?? []).flatMap((a) => a.stream_detail ?? []).find((s) => s.name === stream)?.cluster;
}

interface StreamCluster {
  leader?: string;
  replicas?: Array<{ name: string; current: boolean; offline?: boolean }>;
}

async function monitor<T>(n: NatsClusterNode, path: string): Promise<T | undefined> {
  const res = await fetch(`http://127.0.0.1:${n.monitorPort}${path}`, { signal: AbortSignal.timeout(2000) }).catch(
    () => undefined,
  );
  return res?.ok ? ((await res.json()) as T) : undefined;
}

/**
 * The node a client named `name` (a service: connections carry its name) is attached to. Waits up
 * to `timeoutMs` for it: right after a fault the client may still be between two servers.
 */
export async function nodeOfClient(
  cluster: NatsClusterHandle,
  name: string,
  timeoutMs = 10_000,
): Promise<NatsClusterNode | undefined> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const placement = await clientsByNode(cluster);
    const node = Object.entries(placement).find(([, names]) => names.includes(name))?.[0];
    if (node) return cluster.node(node);
    if (Date.now() > until) return undefined;
    await sleep(250);
  }
}

/** The connection names on each running, unpaused node (for failure messages: who was where). */
export async function clientsByNode(cluster: NatsClusterHandle): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const n of cluster.nodes.filter((x) => x.alive && !x.paused)) {
    const connz = await monitor<{ connections?: Array<{ name?: string }> }>(n, "/connz?limit=1024");
    out[n.name] = (connz?.connections ?? []).map((c) => c.name ?? "?").sort();
  }
  return out;
}

/** The node's server id, as the other nodes' /routez report it (ask before pausing it). */
export async function serverId(node: NatsClusterNode): Promise<string | undefined> {
  return (await monitor<{ server_id?: string }>(node, "/varz"))?.server_id;
}

/**
 * The running, unpaused nodes that still hold a route to the server `id`. While they do, they keep
 * the queue subscriptions its clients had and pick them for a share of the requests.
 */
export async function nodesRoutingTo(cluster: NatsClusterHandle, id: string): Promise<string[]> {
  const out: string[] = [];
  for (const n of cluster.nodes.filter((x) => x.alive && !x.paused)) {
    const routez = await monitor<{ routes?: Array<{ remote_id?: string }> }>(n, "/routez");
    if ((routez?.routes ?? []).some((r) => r.remote_id === id)) out.push(n.name);
  }
  return out;
}

/** Freezes the node for `ms`, then lets it run again. */
export async function pauseNode(node: NatsClusterNode, ms: number): Promise<void> {
  node.pause();
  try {
    await sleep(ms);
  } finally {
    node.resume();
  }
}
