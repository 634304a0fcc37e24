import { createServer, type Server } from "node:http";
import { metric } from "@orch/kit/metrics";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { AgentLogger } from "./runtime.js";

/** What the daemon and the state executor report; a no-op unless --metrics-listen serves it. */
export interface AgentMetrics {
  linkConnected(up: boolean): void;
  /** One executed resource's status (ok/changed/failed/skipped/unsupported). */
  resource(status: string): void;
}

const RESULTS = ["ok", "changed", "failed", "skipped", "unsupported"] as const;
const noop: AgentMetrics = { linkConnected() {}, resource() {} };
let current: AgentMetrics = noop;

/**
 * The process's recorder. Process-wide (like the kit's RPC observers) because the registry it
 * feeds is the process's; reporting sites call it without every feature threading it through.
 */
export const agentMetrics = (): AgentMetrics => current;

export function createAgentMetrics(registry: Registry): AgentMetrics {
  const link = metric(registry, "orch_agent_link_connected");
  const resources = metric(registry, "orch_agent_resources_total");
  link.set(0);
  return {
    linkConnected: (up) => link.set(up ? 1 : 0),
    resource: (status) => resources.inc({ result: (RESULTS as readonly string[]).includes(status) ? status : "other" }),
  };
}

/**
 * Opt-in Prometheus endpoint (`--metrics-listen host:port`): GET /metrics with Node's default
 * metrics and the orch_agent_* ones; nothing else is served. Installs the process recorder.
 */
export async function startMetricsServer(
  listen: string,
  log: AgentLogger,
): Promise<{ port: number; close(): Promise<void> }> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  current = createAgentMetrics(registry);
  const server: Server = createServer(async (req, res) => {
    if (req.method === "GET" && (req.url === "/metrics" || req.url?.startsWith("/metrics?"))) {
      try {
        const body = await registry.metrics();
        res.writeHead(200, { "content-type": registry.contentType }).end(body);
      } catch (err) {
        res.writeHead(500).end(`${(err as Error).message}\n`);
      }
      return;
    }
    res.writeHead(404).end();
  });
  const i = listen.lastIndexOf(":");
  const host = listen.slice(0, i).replace(/^\[(.*)\]$/, "$1");
  const port = Number(listen.slice(i + 1));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const addr = server.address();
  const bound = typeof addr === "object" && addr ? addr.port : port;
  log.info({ metrics_listen: `${host}:${bound}` }, "serving Prometheus metrics");
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        current = noop;
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
