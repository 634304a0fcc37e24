import { hostname } from "node:os";
import { AgentsService } from "@orch/contracts";
import { cachedReleaseCatalog, serveRpc, type Logger, type Service } from "@orch/kit";
import type { AgentsDeps, LinkInfo } from "./deps.js";
import { discoverHandlers } from "./handlers/discover.js";
import { joinTokenHandlers } from "./handlers/join-tokens.js";
import { linkInfoHandlers } from "./handlers/link-info.js";
import { metricsHandlers } from "./handlers/metrics.js";
import { registryHandlers } from "./handlers/registry.js";
import { summaryHandlers } from "./handlers/summary.js";
import { tagHandlers } from "./handlers/tags.js";
import { upgradeHandlers } from "./handlers/upgrades.js";
import { createHub, type Hub } from "./link/hub.js";
import { createPresence } from "./link/presence.js";
import { serverFrame } from "./link/relay.js";
import { startLinkServer, type LinkServer } from "./link/server.js";
import { acceptLink, type LinkCall } from "./link/session.js";
import { createMetricsWriter } from "./metrics-writer.js";
import { registerAgentsMetrics } from "./prometheus.js";
import { startReplicaTicker } from "./replicas.js";
import { startPeriodicJobs } from "./periodic-jobs.js";
import { withUpgradeCompletion } from "./upgrades/complete.js";

export interface AgentsServiceHandle extends Service {
  /** The bound agent-link port (agents.link_port, or the one picked when 0). */
  linkPort: number;
  /** This process's replica id (the `replica` column of the links it holds). */
  replica: string;
  hub: Hub;
}

export async function createAgentsService(deps: AgentsDeps): Promise<AgentsServiceHandle> {
  const cfg = deps.config.agents;
  const { log } = deps;
  const replica = `${hostname()}-${process.pid}-${deps.ids.next().slice(-6).toLowerCase()}`;
  const hub = createHub();
  const presence = withUpgradeCompletion(createPresence(deps.events, deps.pool), deps);
  const metrics = createMetricsWriter({ pool: deps.pool, clock: deps.clock, log });
  const cleanups = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>) => {
    cleanups.add(p);
    void p.finally(() => cleanups.delete(p));
  };

  const ticker = await startReplicaTicker(
    {
      pool: deps.pool,
      events: deps.events,
      clock: deps.clock,
      log,
      replica,
      heartbeatMs: cfg.replica_heartbeat_seconds * 1000,
      timeoutMs: cfg.replica_timeout_seconds * 1000,
    },
    {
      async revived() {
        for (const l of hub.all()) await presence.connected({ ...l.up, now: deps.clock.now() });
      },
    },
  );

  let draining = false;
  const server = await startLinkServer({
    host: cfg.link_host,
    port: cfg.link_port,
    tlsCert: cfg.tls_cert,
    tlsKey: cfg.tls_key,
    tlsCa: cfg.tls_ca,
    insecure: cfg.insecure,
    keepaliveMs: cfg.keepalive_seconds * 1000,
    keepaliveTimeoutMs: cfg.keepalive_timeout_seconds * 1000,
    onStream(call) {
      if (draining) return refuseDraining(call);
      acceptLink(call, {
        nc: deps.nc,
        pool: deps.pool,
        presence,
        hub,
        metrics,
        log: log.child({ component: "link" }),
        clock: deps.clock,
        ids: deps.ids,
        replica,
        metricsIntervalSeconds: cfg.metrics_interval_seconds,
        handshakeTimeoutMs: cfg.handshake_timeout_seconds * 1000,
        terminalGrantMs: cfg.terminal_grant_hours * 3_600_000,
        track,
      });
    },
  });
  const linkInfo: LinkInfo = {
    announced: () =>
      cfg.advertise_address || `${cfg.link_host.includes(":") ? `[${cfg.link_host}]` : cfg.link_host}:${server.port}`,
  };

  // One cached read of releases.dir for the service: which versions exist, and which agents are outdated.
  const releases = cachedReleaseCatalog(deps.config.releases.dir, deps.clock);
  const rpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "agents",
    service: AgentsService,
    log,
    handlers: {
      ...registryHandlers(deps, releases),
      ...summaryHandlers(deps),
      ...tagHandlers(deps, releases),
      ...metricsHandlers(deps),
      ...discoverHandlers(deps, linkInfo),
      ...joinTokenHandlers(deps),
      ...upgradeHandlers(deps, releases),
      ...linkInfoHandlers({
        advertiseAddress: cfg.advertise_address,
        port: () => server.port,
        identity: server.identity,
      }),
    },
  });

  registerAgentsMetrics(deps.metrics, { pool: deps.pool, links: () => hub.size() });

  const jobs = startPeriodicJobs(deps, replica);

  announceLink(log, server, replica);

  return {
    linkPort: server.port,
    replica,
    hub,
    async stop() {
      draining = true;
      jobs.stop();
      server.stopAccepting();
      await rpc.stop();
      // Agents reconnect (to another replica, or to this service once it is back) by themselves.
      await Promise.all(hub.all().map((l) => l.close("server_shutdown")));
      await Promise.all([...cleanups]);
      await server.shutdown();
      await metrics.stop();
      await ticker.stop();
    },
  };
}

function refuseDraining(call: LinkCall): void {
  call.write(
    serverFrame({
      frame: {
        case: "refusal",
        value: { reason: "server_draining", message: "this replica is shutting down; reconnect" },
      },
    }),
  );
  call.end();
}

function announceLink(log: Logger, server: LinkServer, replica: string): void {
  log.info({ link_port: server.port, tls: server.tls, replica }, "agent link listening");
  if (server.identity) {
    const { fingerprint, chainFingerprints, subject, validTo } = server.identity;
    // What agents pin (--server-fingerprint): the CA's survives server certificate renewals.
    log.info({ fingerprint, ca_fingerprints: chainFingerprints, subject, valid_to: validTo }, "agent link certificate");
  } else {
    log.warn(
      "agent link is PLAINTEXT (agents.insecure): agents cannot authenticate this server " +
        "and link traffic is readable on the network",
    );
  }
}
