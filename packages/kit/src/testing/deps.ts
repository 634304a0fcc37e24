import type { Logger } from "../logger.js";
import { createPool, migrate } from "../db.js";
import { ulidGenerator, systemClock, type Clock, type IdGenerator } from "../ids.js";
import { createEvents, createRelay, type Relay } from "../outbox.js";
import type { ServiceDeps } from "../service.js";
import { createMetricsRegistry } from "../health.js";
import { createIdempotencyStore, type IdempotencyStore } from "../idempotency.js";
import type { DbHandle } from "./database.js";
import { silentLogger } from "./logging.js";
import type { NatsHandle } from "./nats.js";

/**
 * The same deps `runMain` builds, for calling a service factory directly in a test: a pool on the
 * test database (migrated), a NATS connection to the test server, and a running outbox relay.
 */
export async function serviceDeps<C>(opts: {
  name: string;
  nats: NatsHandle;
  db: DbHandle;
  schema: string | null;
  migrations?: string;
  config: C;
  log?: Logger;
  clock?: Clock;
  ids?: IdGenerator;
}): Promise<ServiceDeps<C> & { relay: Relay | undefined; close(): Promise<void> }> {
  const log = opts.log ?? silentLogger();
  const clock = opts.clock ?? systemClock;
  const ids = opts.ids ?? ulidGenerator(clock);
  const nc = await opts.nats.connect(opts.name);
  const pool = createPool({ url: opts.db.url, schema: opts.schema ?? "public", max: 5 });
  let relay: Relay | undefined;
  let idempotency: IdempotencyStore | undefined;
  if (opts.schema) {
    await migrate(pool, opts.schema, opts.migrations ?? null);
    relay = createRelay({ pool, nc, log, stream: { replicas: 1, maxAgeDays: 1 }, pollMs: 100 });
    relay.start();
    idempotency = createIdempotencyStore({ pool, log, clock });
  }
  const events = createEvents({ pool, ids, clock, ...(relay ? { relay } : {}) });
  return {
    config: opts.config,
    log,
    nc,
    pool,
    events,
    ids,
    clock,
    metrics: createMetricsRegistry(opts.name),
    idempotency,
    relay,
    async close() {
      idempotency?.stop();
      await relay?.stop();
      await pool.end();
      await nc.close().catch(() => {});
    },
  };
}
