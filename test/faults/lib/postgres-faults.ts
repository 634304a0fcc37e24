// Stopping and restarting the scenario's own Postgres instance while the load runs.
import type { PgStopMode, PrivatePostgres } from "@orch/kit/testing";
import type { MixedLoad } from "./types.js";

/**
 * How long a service keeps waiting on Postgres before it gives a request (or a held message) up,
 * i.e. the outage it can ride out without a client noticing more than a slow answer:
 * - a request never retries a query: a refused or dropped connection fails at once with 503
 *   database_unavailable (OrchError.from in packages/kit/src/errors.ts); with the pool exhausted
 *   it waits at most connectionTimeoutMillis = 5 s (packages/kit/src/db.ts createPool);
 * - the gateway gives up on an RPC after nats.request_timeout_ms = 5 s (504);
 * - a statement may run statement_timeout = 15 s (database.statement_timeout_ms);
 * - audit holds the events it cannot store yet for ack_wait (30 s by default, SHORT_ACK_WAIT_MS
 *   here) and extends it with working() while it retries, so the stream does not redeliver them;
 * - outbox relays, audit ingest and periodic jobs retry forever; only start-up gives up (~50 s).
 * So the budget is 15 s: a "long" outage must outlast it and the audit ack wait.
 */
export const PG_RETRY_BUDGET_MS = 15_000;

/** Audit's ack wait for these scenarios, so that the long outage also outlasts it. */
export const SHORT_ACK_WAIT_MS = 10_000;

export interface OutageTiming {
  mode: PgStopMode;
  /** From the "fault" mark to the server being reachable again. */
  downMs: number;
  /** How long pg_ctl start took (crash recovery after an immediate stop). */
  startMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Marks the fault, stops Postgres, keeps it down for `downMs`, starts it and marks it healed. */
export async function postgresOutage(
  pgi: PrivatePostgres,
  load: MixedLoad,
  o: { mode: PgStopMode; downMs: number },
): Promise<OutageTiming> {
  load.mark("fault");
  const from = Date.now();
  await pgi.stop(o.mode);
  await sleep(Math.max(0, o.downMs - (Date.now() - from)));
  const startAt = Date.now();
  await pgi.start();
  const healed = Date.now();
  load.mark("healed");
  return { mode: o.mode, downMs: healed - from, startMs: healed - startAt };
}
