import type { z } from "zod";
import { type baseConfigSchema, loadConfig } from "./config.js";
import { createPool, ensureDatabase, migrate, type Pool } from "./db.js";
import { createMetricsRegistry, startHealthServer } from "./health.js";
import { createIdempotencyStore, type IdempotencyStore } from "./idempotency.js";
import { backoff, retry } from "./backoff.js";
import { systemClock, ulidGenerator, type Clock, type IdGenerator } from "./ids.js";
import { createLogger, type Logger } from "./logger.js";
import { connectNats, type NatsConnection } from "./nats.js";
import { createEvents, createRelay, type Events, type Relay } from "./outbox.js";
import type { Registry } from "prom-client";
import { registerOutboxMetrics } from "./metrics/outbox.js";
import { rpcMetricsObserver } from "./metrics/rpc.js";
import { addRpcObserver } from "./rpc-observers.js";
import { startTracing } from "./tracing.js";
import { tracingRpcObserver } from "./tracing-rpc.js";

/** What every service factory receives. Tests build the same object with their own NATS and DB. */
export interface ServiceDeps<C> {
  config: C;
  log: Logger;
  nc: NatsConnection;
  pool: Pool;
  events: Events;
  ids: IdGenerator;
  clock: Clock;
  metrics: Registry;
  /** Replies of idempotent requests (pass to serveRpc); absent for a service without a database. */
  idempotency?: IdempotencyStore | undefined;
}

export interface Service {
  /** Stop taking new work and finish what is in flight. */
  stop(): Promise<void>;
}

export interface MainOptions<S extends z.ZodObject> {
  name: string;
  /** Postgres schema owned by the service; null for services without a database (gateway). */
  schema: string | null;
  configSchema: S;
  /** Folder of `*.sql` migrations. */
  migrations?: string;
  start(deps: ServiceDeps<Readonly<z.infer<S>>>): Promise<Service>;
}

export type BaseConfigSchema = typeof baseConfigSchema;

/**
 * The whole life of a service process: config, connections, migrations, the outbox relay, health
 * endpoints, and a graceful stop on SIGTERM/SIGINT. `main.ts` files call only this.
 */
export async function runMain<S extends z.ZodObject>(opts: MainOptions<S>): Promise<void> {
  let config: Readonly<z.infer<S>>;
  try {
    config = loadConfig(opts.configSchema);
  } catch (err) {
    process.stderr.write(`${opts.name}: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const base = config as unknown as z.infer<BaseConfigSchema>;
  // Before any pool or client exists: they instrument themselves only when tracing is on.
  const tracing = startTracing(opts.name);
  if (tracing.enabled) addRpcObserver(tracingRpcObserver());
  const log = createLogger({ name: opts.name, level: base.log.level });
  const clock = systemClock;
  const ids = ulidGenerator(clock);
  const metrics = createMetricsRegistry(opts.name);
  addRpcObserver(rpcMetricsObserver(metrics));

  const nc = await connectNats({
    url: base.nats.url,
    name: opts.name,
    user: base.nats.user,
    password: base.nats.password,
    log,
  });
  let pool: Pool | undefined;
  let relay: Relay | undefined;
  let idempotency: IdempotencyStore | undefined;
  if (opts.schema) {
    await retryStartup(() => ensureDatabase(base.database.url), log, "database");
    pool = createPool({
      url: base.database.url,
      schema: opts.schema,
      max: base.database.pool_max,
      statementTimeoutMs: base.database.statement_timeout_ms,
    });
    await retryStartup(() => migrate(pool!, opts.schema!, opts.migrations ?? null, log), log, "migrations");
    relay = createRelay({
      pool,
      nc,
      log,
      stream: { replicas: base.nats.audit_stream_replicas, maxAgeDays: base.nats.audit_stream_max_age_days },
    });
    relay.start();
    registerOutboxMetrics(metrics, pool);
    idempotency = createIdempotencyStore({ pool, log, clock });
  }
  const events = createEvents({ pool: pool as Pool, ids, clock, ...(relay ? { relay } : {}) });
  const service = await opts.start({ config, log, nc, pool: pool as Pool, events, ids, clock, metrics, idempotency });
  const health = await startHealthServer({
    port: base.health.port,
    host: base.health.host,
    registry: metrics,
    checks: {
      nats: async () =>
        !nc.isClosed() &&
        (await nc.flush().then(
          () => true,
          () => false,
        )),
      ...(pool ? { postgres: async () => (await pool!.query("SELECT 1")).rowCount === 1 } : {}),
    },
  });
  log.info({ health_port: health.port }, `${opts.name} started`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    health.setDraining();
    const hard = setTimeout(() => process.exit(1), 20_000);
    hard.unref();
    try {
      await service.stop();
      idempotency?.stop();
      await relay?.stop();
      await nc.drain().catch(() => {});
      await pool?.end().catch(() => {});
      await health.close();
      await tracing.shutdown();
    } finally {
      log.info("stopped");
      process.exit(0);
    }
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/**
 * Start-up waits for what it needs (Postgres, JetStream resources on a cluster that is electing
 * leaders) about 50 s (30 tries, 200 ms doubling to 2 s), then fails.
 */
export function retryStartup<T>(fn: () => Promise<T>, log: Logger, what: string): Promise<T> {
  return retry(fn, {
    attempts: 30,
    policy: backoff({ initialMs: 200, maxMs: 2000 }),
    onError: (err, attempt) =>
      log.warn({ err: (err as Error).message, attempt: attempt + 1 }, `${what} not ready; retrying`),
  });
}
