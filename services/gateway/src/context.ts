import type { FastifyInstance } from "fastify";
import type { Clock, IdGenerator, Logger, MetricsRegistry, NatsConnection } from "@orch/kit";
import type { Principal, TokenCache } from "./auth-cache.js";
import type { GatewayConfig } from "./config.js";
import type { GatewayLiveSessions } from "./live-nats.js";

// A leaf on purpose: route, stream and socket modules import these types, and app.ts imports them all.

export interface GatewayDeps {
  config: Readonly<GatewayConfig>;
  log: Logger;
  nc: NatsConnection;
  clock: Clock;
  ids: IdGenerator;
  /** The process registry (runMain's, served on the health port); absent in tests that do not read metrics. */
  metrics?: MetricsRegistry;
}

/** What route modules receive. */
export interface GatewayContext extends GatewayDeps {
  tokens: TokenCache;
  /** Long-lived connections (audit stream, terminals) bound to the credential that opened them. */
  live: GatewayLiveSessions;
  /** Default RPC timeout for route handlers. */
  timeoutMs: number;
  app: FastifyInstance;
}

declare module "fastify" {
  interface FastifyRequest {
    principal?: Principal;
  }
}
