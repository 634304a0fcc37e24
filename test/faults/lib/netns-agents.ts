// Agents as separate machines: each orch-agent runs in its own network namespace on the test
// bridge (test/e2e/lib/netns.ts) and dials the link through the bridge forwarder, so a host can be
// cut off from the network and healed again while its process keeps running.
//
// A cut disables the host's bridge port: frames vanish in both directions, the links stay up. That
// is what a real partition looks like to both TCP ends (silence, retransmits, no RST, no "network
// unreachable"), so only keepalives can notice it, and data held back is delivered after a restore.
// Taking a veth down instead would drop the namespace's routes (instant ENETUNREACH on the agent),
// and this machine has neither nft/iptables nor tc netem/classifiers for a DROP rule.
import { testLinkTls } from "@orch/kit/testing";
import { agentPool, type AgentProcess } from "../../../services/agents/test/harness.js";
import { createTestNet, type NetHost, type TestNet } from "../../e2e/lib/netns.js";
import type { AgentSpawner } from "./types.js";

export interface NetnsAgent {
  host: NetHost;
  nodeId: string;
  process: AgentProcess;
}

export interface NetnsAgents {
  /** Pass as `spawnAgents` to startFaultStack: one namespace host per agent. */
  spawn: AgentSpawner;
  /** The agents started, in host order (empty before `spawn` ran). */
  agents(): NetnsAgent[];
  /** Partitions these hosts (indexes as in `FaultAgent.host`) from everything else. */
  cut(hosts: number[]): Promise<void>;
  restore(hosts: number[]): Promise<void>;
}

export function netnsAgents(): NetnsAgents {
  let net: TestNet | undefined;
  const started: NetnsAgent[] = [];
  const hostOf = (i: number) => {
    const h = net?.hosts.find((x) => x.index === i);
    if (!h) throw new Error(`no namespace host ${i}`);
    return h;
  };

  const spawnAgents: AgentSpawner = async ({ linkPort, count }) => {
    const n = await createTestNet(count);
    net = n;
    const pool = agentPool();
    const stop = async () => {
      await pool.stop();
      await n.close();
    };
    try {
      // The services listen on loopback; the hosts reach the link at the bridge address, same port.
      await n.forward(linkPort);
      const server = `${n.hostAddr}:${linkPort}`;
      const procs = n.hosts.map((host) => ({
        host,
        // The test CA's certificate names loopback only, not the bridge address: pin the CA instead
        // (pinning trusts by key, names are not checked).
        process: pool.spawn(
          ["--server", server, "--server-fingerprint", testLinkTls().caFingerprint, "--metrics-interval", "1"],
          { netns: host.ns },
        ),
      }));
      for (const p of procs) {
        // Six node processes starting at once on a busy two-core machine can take a while.
        const nodeId = await p.process.nodeId(60_000).catch(() => {
          const c = p.process.child;
          throw new Error(
            `agent on ${p.host.ns} did not start (exit ${c.exitCode ?? c.signalCode}): ${p.process.lines.slice(-5).join(" | ")}`,
          );
        });
        started.push({ ...p, nodeId });
      }
    } catch (err) {
      await stop();
      throw err;
    }
    return {
      agents: started.map((a) => ({
        nodeId: a.nodeId,
        host: a.host.index,
        kill: (sig: NodeJS.Signals = "SIGKILL") => a.process.signal(sig),
      })),
      stop,
    };
  };

  return {
    spawn: spawnAgents,
    agents: () => [...started],
    async cut(hosts) {
      for (const i of hosts) await net!.cut(hostOf(i));
    },
    async restore(hosts) {
      for (const i of hosts) await net!.restore(hostOf(i));
    },
  };
}
