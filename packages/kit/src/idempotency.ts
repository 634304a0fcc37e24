import { createHash } from "node:crypto";
import type { MsgHdrs } from "@nats-io/transport-node";
import { IDEMPOTENCY_KEY_RE, IDEMPOTENCY_TTL_MS } from "@orch/contracts";
import type { Pool } from "./db.js";
import { OrchError, errorFromBinary, errorToBinary, type Code } from "./errors.js";
import type { Clock } from "./ids.js";
import type { Logger } from "./logger.js";
import { schedulePeriodic, type Periodic } from "./periodic.js";

/**
 * Idempotent RPCs (IETF httpapi Idempotency-Key draft, carried over the bus). The gateway passes the
 * client's key and a hash of the HTTP request; the service that runs the handler remembers the
 * encoded reply in its own schema, so a retry after a lost reply (a NATS outage answered 504 after
 * the change committed) gets the original result instead of making the change twice. The store
 * lives with the service, not the gateway: only the service knows whether the change happened.
 */

export const IDEMPOTENCY_HDR = {
  key: "orch-idempotency-key",
  /** Hash of what the client sent (the gateway's HTTP method, path and body); same key + other hash → 409. */
  hash: "orch-idempotency-hash",
  /** Set on a reply that was replayed from the store. */
  replayed: "orch-idempotency-replayed",
} as const;

/** Per-RPC key scope: the caller, its key and the method (a gateway route may make several RPCs with one key). */
export interface IdempotencyScope {
  actorId: string;
  key: string;
  method: string;
  hash: string;
}

export type Claim = { kind: "run" } | { kind: "replay"; data: Uint8Array; error: OrchError | undefined };

export interface IdempotencyStore {
  /** Claims the key for this request, or returns the stored reply. Throws 409s for reuse and in-flight. */
  begin(scope: IdempotencyScope, lockUntil: number): Promise<Claim>;
  /** Stores the reply of a claimed request. */
  finish(scope: IdempotencyScope, data: Uint8Array, error: OrchError | undefined): Promise<void>;
  /** Releases a claim whose outcome must not be replayed (a transient failure: the client should retry). */
  abandon(scope: IdempotencyScope): Promise<void>;
  /** Runs the 24 h prune now if its period has passed (it also runs hourly by itself). */
  prune(): Promise<boolean>;
  stop(): void;
}

/**
 * Outcomes that say nothing about the request itself, only about the moment: they are not stored, so
 * the retry the client is expected to make runs the handler again.
 */
const TRANSIENT: ReadonlySet<Code> = new Set<Code>([
  "UNAVAILABLE",
  "DEADLINE_EXCEEDED",
  "INTERNAL",
  "RESOURCE_EXHAUSTED",
  "UNAUTHENTICATED",
]);

/**
 * A claim outlives the request's deadline by this much before another request may take it over: a
 * replica that died mid-request must not block the key for 24 h, but a slow handler that is still
 * running must not be run twice.
 */
const TAKEOVER_GRACE_MS = 60_000;

export function createIdempotencyStore(deps: { pool: Pool; log: Logger; clock: Clock }): IdempotencyStore {
  const { pool, clock } = deps;
  const prune: Periodic = schedulePeriodic(deps, "kit.idempotency.prune", 3_600_000, async (c) => {
    await c.query("DELETE FROM idempotency WHERE created_at < $1", [clock.now() - IDEMPOTENCY_TTL_MS]);
  });
  const unavailable = (err: unknown) =>
    new OrchError(
      "UNAVAILABLE",
      "idempotency_store_unavailable",
      "the idempotency store is unavailable; retry",
      {},
      {
        cause: err,
      },
    );
  const reused = () =>
    new OrchError("FAILED_PRECONDITION", "idempotency_key_reused", "this Idempotency-Key was used for another request");
  const inFlight = () =>
    new OrchError(
      "FAILED_PRECONDITION",
      "idempotency_key_in_flight",
      "a request with this Idempotency-Key is still running; retry later",
    );
  const pk = (s: IdempotencyScope) => [s.actorId, s.key, s.method];
  const WHERE_PK = "actor_id = $1 AND key = $2 AND method = $3";

  return {
    async begin(s, lockUntil) {
      const now = clock.now();
      const fresh = now - IDEMPOTENCY_TTL_MS;
      try {
        // The same key for another request, by any method of this service, is a reuse.
        const other = await pool.query(
          `SELECT 1 FROM idempotency
           WHERE actor_id = $1 AND key = $2 AND request_hash <> $3 AND created_at >= $4 LIMIT 1`,
          [s.actorId, s.key, s.hash, fresh],
        );
        if (other.rowCount) throw reused();
        // One statement claims a new key, an expired one, or one whose holder is presumed dead.
        const claimed = await pool.query(
          `INSERT INTO idempotency (actor_id, key, method, request_hash, state, locked_until, created_at)
           VALUES ($1, $2, $3, $4, 'running', $5, $6)
           ON CONFLICT (actor_id, key, method) DO UPDATE SET request_hash = EXCLUDED.request_hash,
             state = 'running', locked_until = EXCLUDED.locked_until, created_at = EXCLUDED.created_at,
             reply = NULL, error_code = NULL
           WHERE idempotency.created_at < $7
              OR (idempotency.state = 'running' AND idempotency.locked_until < $6)
           RETURNING 1`,
          [s.actorId, s.key, s.method, s.hash, lockUntil + TAKEOVER_GRACE_MS, now, fresh],
        );
        if (claimed.rowCount) return { kind: "run" };
        const sql = `SELECT state, request_hash, error_code, reply FROM idempotency WHERE ${WHERE_PK}`;
        const r = await pool.query<StoredRow>(sql, pk(s));
        const row = r.rows[0];
        if (!row) return await this.begin(s, lockUntil); // pruned in between
        if (row.request_hash !== s.hash) throw reused();
        if (row.state !== "done") throw inFlight();
        const data = new Uint8Array(row.reply ?? Buffer.alloc(0));
        return { kind: "replay", data, error: row.error_code ? errorFromBinary(data) : undefined };
      } catch (err) {
        throw err instanceof OrchError ? err : unavailable(err);
      }
    },

    async finish(s, data, error) {
      if (error && TRANSIENT.has(error.code)) return this.abandon(s);
      const stored = error ? errorToBinary(error) : data;
      await pool
        .query(
          `UPDATE idempotency SET state = 'done', reply = $4, error_code = $5 WHERE ${WHERE_PK} AND state = 'running'`,
          [...pk(s), Buffer.from(stored), error?.code ?? null],
        )
        // The reply still goes out; a retry then finds the claim running until it can be taken over.
        .catch((err: unknown) => deps.log.warn({ err, method: s.method }, "storing the idempotent reply failed"));
    },

    async abandon(s) {
      await pool
        .query(`DELETE FROM idempotency WHERE ${WHERE_PK} AND state = 'running'`, pk(s))
        .catch((err: unknown) => deps.log.warn({ err, method: s.method }, "releasing the idempotency key failed"));
    },

    prune: () => prune.tick(),
    stop: () => prune.stop(),
  };
}

interface StoredRow {
  state: string;
  request_hash: string;
  error_code: string | null;
  reply: Buffer | null;
}

/** The scope of an incoming request, or undefined when it carries no key. Throws on a malformed key. */
export function readIdempotency(
  h: MsgHdrs | undefined,
  actorId: string,
  method: string,
  data: Uint8Array,
): IdempotencyScope | undefined {
  const key = h?.get(IDEMPOTENCY_HDR.key);
  if (!key) return undefined;
  if (!IDEMPOTENCY_KEY_RE.test(key)) {
    throw new OrchError("INVALID_ARGUMENT", "invalid_idempotency_key", "the Idempotency-Key is malformed");
  }
  // Bus callers other than the gateway may send only the key; the request bytes then stand for the request.
  const hash = h?.get(IDEMPOTENCY_HDR.hash) || createHash("sha256").update(method).update(data).digest("hex");
  return { actorId, key, method, hash };
}

/**
 * Runs `run` (the handler, returning its encoded reply) at most once per scope: a repeat gets the
 * stored reply (or error) back. Without a store or a key it is just `run()`.
 */
export async function withIdempotency(
  store: IdempotencyStore | undefined,
  scope: IdempotencyScope | undefined,
  deadline: number,
  run: () => Promise<Uint8Array>,
): Promise<{ data: Uint8Array; replayed: boolean }> {
  if (!store || !scope) return { data: await run(), replayed: false };
  const claim = await store.begin(scope, deadline);
  if (claim.kind === "replay") {
    if (claim.error) throw claim.error;
    return { data: claim.data, replayed: true };
  }
  let data: Uint8Array;
  try {
    data = await run();
  } catch (err) {
    await store.finish(scope, new Uint8Array(), OrchError.from(err));
    throw err;
  }
  await store.finish(scope, data, undefined);
  return { data, replayed: false };
}
