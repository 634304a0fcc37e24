// Faults of the 3-node NATS cluster: kills of the stream leader or any node, restarts, and a node
// frozen with SIGSTOP (its sockets stay open, it answers nothing: a stalled VM or a GC pause).
import type { NatsClusterHandle, NatsClusterNode } from "@orch/kit/testing";

/**
 * The heartbeats a frozen node has to outlast:
 * - nats-server 2.9's RAFT (server/raft.go): the leader heartbeats every 1 s, a follower that has
 *   heard nothing for 4-9 s campaigns, a leader without quorum for 10 s steps down;
 * - the services' client pings (CLIENT_LIVENESS in packages/kit/src/nats.ts): two unanswered
 *   ones make a client drop the server, and a redial of the frozen server gives up after its
 *   dial timeout, so a client is on another node well within the stale time plus a few redials.
 * The pause is long enough for the clients to have left the frozen node and served elsewhere.
 * Until the other nodes drop their routes to it, a request can still be routed to the queue
 * subscription a service held there (a 504 with Retry-After), so the pause leaves room for that.
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

/** The node a client named `name` (a service: connections carry its name) is attached to. */
export async function nodeOfClient(cluster: NatsClusterHandle, name: string): Promise<NatsClusterNode | undefined> {
  for (const n of cluster.nodes.filter((x) => x.alive && !x.paused)) {
    const res = await fetch(`http://127.0.0.1:${n.monitorPort}/connz?limit=1024`, {
      signal: AbortSignal.timeout(2000),
    }).catch(() => undefined);
    if (!res?.ok) continue;
    const connz = (await res.json()) as { connections?: Array<{ name?: string }> };
    if ((connz.connections ?? []).some((c) => c.name === name)) return n;
  }
  return undefined;
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
