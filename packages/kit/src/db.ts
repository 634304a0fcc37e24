import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import type { Logger } from "./logger.js";
import { trace } from "@opentelemetry/api";
import { SpanKind, SpanStatusCode, tracer, tracingEnabled } from "./tracing.js";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: a pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query">;

// int8 → number: every int64 we store (times in ms, counts) fits in 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

export interface PoolOptions {
  url: string;
  /** The service's own schema; it goes first on the search_path so queries stay unqualified. */
  schema: string;
  max?: number;
  statementTimeoutMs?: number;
  applicationName?: string;
}

export function createPool(opts: PoolOptions): Pool {
  assertIdent(opts.schema);
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.max ?? 10,
    options: `-c search_path=${opts.schema} -c statement_timeout=${opts.statementTimeoutMs ?? 15000}`,
    application_name: opts.applicationName ?? `orch-${opts.schema}`,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30000,
  });
  // A dropped connection (Postgres restart) must not crash the process. pg-pool handles 'error'
  // only while a client is idle; on a checked-out client (a transaction, a job lock) pg would
  // raise it as an uncaught exception. The failed query still rejects, and callers retry.
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  if (tracingEnabled()) traceQueries(pool);
  return pool;
}

/** db.statement is cut here: enough to recognise the query, never the parameter values (sent apart). */
const STATEMENT_MAX = 500;

/**
 * Makes every promise-style query through the pool, or through a client checked out of it, made
 * while a span is active, a CLIENT span "pg.query" under that span. Installed only when tracing is on (createPool),
 * so a default install keeps pg's own methods. pool.query runs client.query with a callback,
 * which is left alone: one query, one span.
 */
function traceQueries(pool: pg.Pool): void {
  pool.query = traced(pool.query.bind(pool)) as typeof pool.query;
  pool.on("connect", (client) => {
    client.query = traced(client.query.bind(client)) as typeof client.query;
  });
}

function traced(query: (...args: unknown[]) => unknown) {
  return (...args: unknown[]): unknown => {
    const first = args[0] as string | { text?: string; submit?: unknown } | undefined;
    // Callback style (pool.query's own dispatch) and submittables (cursors, streams): untouched.
    if (typeof args[args.length - 1] === "function" || (typeof first === "object" && first?.submit)) {
      return query(...args);
    }
    // Only inside a trace: the relay's polls and other background queries would each be a root span, every 500 ms.
    if (!trace.getActiveSpan()) return query(...args);
    const text = typeof first === "string" ? first : (first?.text ?? "");
    const span = tracer().startSpan("pg.query", {
      kind: SpanKind.CLIENT,
      attributes: {
        "db.system": "postgresql",
        "db.operation": /^\s*([a-zA-Z]+)/.exec(text)?.[1]?.toUpperCase() ?? "",
        "db.statement": text.length > STATEMENT_MAX ? `${text.slice(0, STATEMENT_MAX)}…` : text,
      },
    });
    return (query(...args) as Promise<unknown>).then(
      (res) => {
        span.end();
        return res;
      },
      (err: Error & { code?: string }) => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: err?.code ?? err?.message });
        span.end();
        throw err;
      },
    );
  };
}

export function assertIdent(s: string): void {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(s)) throw new Error(`invalid SQL identifier: ${s}`);
}

export async function withTx<T>(pool: Pool, fn: (c: PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query("BEGIN");
    const out = await fn(c);
    await c.query("COMMIT");
    return out;
  } catch (err) {
    await c.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    c.release();
  }
}

const KIT_MIGRATIONS: Array<[string, string]> = [
  [
    "kit_0001_outbox",
    `CREATE TABLE outbox (
       id text PRIMARY KEY,
       subject text NOT NULL,
       payload bytea NOT NULL,
       created_at timestamptz NOT NULL DEFAULT now()
     );`,
  ],
  [
    "kit_0002_jobs",
    `CREATE TABLE jobs (
       name text PRIMARY KEY,
       last_run_at bigint NOT NULL,
       last_replica text NOT NULL DEFAULT ''
     );`,
  ],
  [
    // Stored replies of idempotent RPCs (idempotency.ts), kept 24 h.
    "kit_0003_idempotency",
    `CREATE TABLE idempotency (
       actor_id text NOT NULL,
       key text NOT NULL,
       method text NOT NULL,
       request_hash text NOT NULL,
       state text NOT NULL,
       locked_until bigint NOT NULL,
       error_code text,
       reply bytea,
       created_at bigint NOT NULL,
       PRIMARY KEY (actor_id, key, method)
     );
     CREATE INDEX idempotency_created_at ON idempotency (created_at);`,
  ],
  [
    // The W3C traceparent of the request that wrote the event, so its JetStream publish (and the
    // consumers) join that request's trace. Null when tracing is off.
    "kit_0004_outbox_traceparent",
    "ALTER TABLE outbox ADD COLUMN traceparent text;",
  ],
];

/**
 * Applies the kit's own migrations and then `dir/*.sql` in name order, each in its own transaction,
 * under an advisory lock so that N replicas starting at once migrate exactly once.
 */
export async function migrate(pool: Pool, schema: string, dir: string | null, log?: Logger): Promise<string[]> {
  assertIdent(schema);
  const files: Array<[string, string]> = [...KIT_MIGRATIONS];
  if (dir) {
    for (const f of readdirSync(dir)
      .filter((n) => n.endsWith(".sql"))
      .sort())
      files.push([f, readFileSync(join(dir, f), "utf8")]);
  }
  const c = await pool.connect();
  const applied: string[] = [];
  try {
    await c.query("SELECT pg_advisory_lock(hashtext($1))", [`orch.migrate.${schema}`]);
    await c.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await c.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = new Set(
      (await c.query<{ name: string }>(`SELECT name FROM ${schema}.schema_migrations`)).rows.map((r) => r.name),
    );
    for (const [name, sql] of files) {
      if (done.has(name)) continue;
      await c.query("BEGIN");
      try {
        await c.query(`SET LOCAL search_path = ${schema}`);
        await c.query(sql);
        await c.query(`INSERT INTO ${schema}.schema_migrations (name) VALUES ($1)`, [name]);
        await c.query("COMMIT");
        applied.push(name);
        log?.info({ migration: name, schema }, "migration applied");
      } catch (err) {
        await c.query("ROLLBACK").catch(() => {});
        throw new Error(`migration ${schema}/${name} failed: ${(err as Error).message}`, { cause: err });
      }
    }
  } finally {
    await c.query("SELECT pg_advisory_unlock(hashtext($1))", [`orch.migrate.${schema}`]).catch(() => {});
    c.release();
  }
  return applied;
}

/** Creates the database named in `url` if it does not exist (connecting to `postgres` to do so). */
export async function ensureDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, ""));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const c = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    const r = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (r.rowCount === 0) {
      await c.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== "42P04") throw err; // created concurrently
      });
    }
  } finally {
    await c.end();
  }
}

/**
 * Runs `fn` only if this replica wins the named advisory lock (non-blocking), so periodic jobs run
 * on exactly one replica at a time. Returns whether it ran.
 */
export async function withJobLock(pool: Pool, name: string, fn: (c: PoolClient) => Promise<void>): Promise<boolean> {
  const c = await pool.connect();
  try {
    const r = await c.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS ok", [`orch.job.${name}`]);
    if (!r.rows[0]?.ok) return false;
    try {
      await fn(c);
    } finally {
      await c.query("SELECT pg_advisory_unlock(hashtext($1))", [`orch.job.${name}`]).catch(() => {});
    }
    return true;
  } finally {
    c.release();
  }
}
