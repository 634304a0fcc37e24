import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import {
  AGENT_PUBLISH_ALLOWED,
  AGENT_SUBSCRIBE_ALLOWED,
  AgentCommandService,
  AgentStateService,
  AgentTerminalService,
  OpenTerminalRequestSchema,
  RunCommandRequestSchema,
} from "@orch/contracts";
import { groupCommit, type Clock, type Logger, type Queryable } from "@orch/kit";
import type { RelayObserver } from "./relay.js";

export type GrantKind = "terminal" | "progress";

/**
 * What an agent must have been given to use a subject: a terminal session, or a state operation or
 * command job ("progress": both publish what the relay asked for while it runs).
 */
export interface Grant {
  kind: GrantKind;
  ref: string;
}

/** Progress grants only need to outlive the Execute or RunCommand that made them. */
export const PROGRESS_GRANT_MS = 60 * 60_000;
/** A refused lookup is remembered this long, so a misbehaving agent cannot turn frames into queries. */
const DENIED_MS = 2000;
const MAX_DENIED = 1024;
const MAX_LOADED = 10_000;

const REF_RE = /^[0-9A-Za-z]{1,64}$/;
const TERM_RE = /^orch\.term\.([0-9A-Za-z]+)\.(?:in|out|ctl)$/;
const PROGRESS_RE = /^orch\.state\.progress\.([0-9A-Za-z]+)$/;
const OUTPUT_RE = /^orch\.state\.output\.([0-9A-Za-z]+)$/;

const OPEN_TERMINAL = AgentTerminalService.method.openTerminal.name;
const EXECUTE = AgentStateService.method.execute.name;
const RUN_COMMAND = AgentCommandService.method.runCommand.name;

const keyOf = (g: Grant) => `${g.kind}:${g.ref}`;

/**
 * ExecuteRequest.operation_id (field 1) read off the wire: decoding the whole request (every
 * resource's spec) for it cost more than the rest of the relay. The last occurrence wins, as in a
 * full decode; a malformed payload throws as fromBinary would.
 */
export function executeOperationId(payload: Uint8Array): string {
  const r = new BinaryReader(payload);
  let id = "";
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === WireType.LengthDelimited) id = r.string();
    else r.skip(wire, field);
  }
  return id;
}

/**
 * The grant a subject needs in one direction; undefined when no grant could allow it. The contracts'
 * allow-lists stay the outer fence (which subjects, which directions); grants narrow them to the
 * sessions and operations that were opened on this agent.
 */
export function grantFor(subject: string, direction: "publish" | "subscribe"): Grant | undefined {
  const fence = direction === "publish" ? AGENT_PUBLISH_ALLOWED : AGENT_SUBSCRIBE_ALLOWED;
  if (!fence.some((re) => re.test(subject))) return undefined;
  const term = TERM_RE.exec(subject);
  if (term) return { kind: "terminal", ref: term[1]! };
  const progress = PROGRESS_RE.exec(subject) ?? OUTPUT_RE.exec(subject);
  if (progress) return { kind: "progress", ref: progress[1]! };
  return undefined;
}

export const grantsDb = {
  async live(db: Queryable, nodeId: string, now: number): Promise<Array<Grant & { expires_at: number }>> {
    const r = await db.query<{ kind: GrantKind; ref: string; expires_at: string }>(
      "SELECT kind, ref, expires_at FROM link_grants WHERE node_id = $1 AND expires_at > $2 ORDER BY expires_at DESC LIMIT $3",
      [nodeId, now, MAX_LOADED],
    );
    return r.rows.map((row) => ({ kind: row.kind, ref: row.ref, expires_at: Number(row.expires_at) }));
  },
  async expiry(db: Queryable, nodeId: string, g: Grant, now: number): Promise<number | undefined> {
    const r = await db.query<{ expires_at: string }>(
      "SELECT expires_at FROM link_grants WHERE node_id = $1 AND kind = $2 AND ref = $3 AND expires_at > $4",
      [nodeId, g.kind, g.ref, now],
    );
    return r.rows[0] ? Number(r.rows[0].expires_at) : undefined;
  },
  /** Never shortens a grant (a re-grant of the same session only extends it). */
  async put(db: Queryable, nodeId: string, g: Grant, expiresAt: number): Promise<void> {
    await db.query(
      `INSERT INTO link_grants (node_id, kind, ref, expires_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (node_id, kind, ref) DO UPDATE SET expires_at = GREATEST(link_grants.expires_at, EXCLUDED.expires_at)`,
      [nodeId, g.kind, g.ref, expiresAt],
    );
  },
  /** put of several grants in one statement; each (node_id, kind, ref) at most once. */
  async putMany(db: Queryable, rows: ReadonlyArray<{ nodeId: string; g: Grant; expiresAt: number }>): Promise<void> {
    await db.query(
      `INSERT INTO link_grants (node_id, kind, ref, expires_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
       ON CONFLICT (node_id, kind, ref) DO UPDATE SET expires_at = GREATEST(link_grants.expires_at, EXCLUDED.expires_at)`,
      [rows.map((r) => r.nodeId), rows.map((r) => r.g.kind), rows.map((r) => r.g.ref), rows.map((r) => r.expiresAt)],
    );
  },
  /** Deletes expired grants in batches; idempotent. */
  async prune(db: Queryable, now: number, batch = 10_000): Promise<number> {
    let total = 0;
    for (let n = batch; n === batch; total += n) {
      n =
        (
          await db.query(
            "DELETE FROM link_grants WHERE ctid IN (SELECT ctid FROM link_grants WHERE expires_at <= $1 LIMIT $2)",
            [now, batch],
          )
        ).rowCount ?? 0;
    }
    return total;
  },
};

type PutRequest = { nodeId: string; g: Grant; expiresAt: number };
const writers = new WeakMap<Queryable, (r: PutRequest) => Promise<void>>();

/**
 * Every link of a replica gets a progress grant per Execute: the grants stored while a write is
 * under way go together in the next one (group commit), so a fan-out to thousands of agents costs
 * a few statements rather than one commit per operation. A failed batch is written again one grant
 * at a time, so one bad row fails alone.
 */
function grantWriter(pool: Queryable, log: Logger): (r: PutRequest) => Promise<void> {
  let writer = writers.get(pool);
  if (!writer) {
    writer = groupCommit<PutRequest, void>({
      max: 1000,
      // One statement cannot upsert the same row twice.
      key: (r) => `${r.nodeId}:${keyOf(r.g)}`,
      batch: async (rows) => {
        await grantsDb.putMany(pool, rows);
        return rows.map(() => undefined);
      },
      one: (r) => grantsDb.put(pool, r.nodeId, r.g, r.expiresAt),
      log,
      what: "link grants",
    });
    writers.set(pool, writer);
  }
  return writer;
}

/** The grants of one link's agent: an in-memory copy of its rows, backed by the database. */
export interface LinkGrants {
  /** Reads the agent's live grants (at link start: it may have been granted through another replica). */
  load(): Promise<void>;
  /** Synchronous when the answer is in memory; asks the database on a miss (granted since the load, elsewhere). */
  allows(g: Grant): boolean | Promise<boolean>;
  /** Allows `g` until the returned release is called (not stored: a request still in flight). */
  hold(g: Grant): () => void;
  /** Allows `g` for `ttlMs` at once in memory; resolves once it is stored. */
  grant(g: Grant, ttlMs: number): Promise<void>;
  /** In memory only, no database. */
  has(g: Grant): boolean;
}

export function createLinkGrants(opts: { pool: Queryable; nodeId: string; clock: Clock; log: Logger }): LinkGrants {
  const held = new Map<string, number>();
  const holds = new Map<string, number>();
  const denied = new Map<string, number>();
  const lookups = new Map<string, Promise<boolean>>();

  const remember = (g: Grant, expiresAt: number) => {
    const k = keyOf(g);
    // A link lives for months and gets a progress grant per Execute: forget the expired ones now and then.
    if (held.size >= MAX_LOADED) {
      const now = opts.clock.now();
      for (const [key, until] of held) if (until <= now) held.delete(key);
    }
    if ((held.get(k) ?? 0) < expiresAt) held.set(k, expiresAt);
    denied.delete(k);
  };

  const has = (g: Grant) => {
    const k = keyOf(g);
    if (holds.has(k)) return true;
    const until = held.get(k);
    if (until === undefined) return false;
    if (until > opts.clock.now()) return true;
    held.delete(k);
    return false;
  };

  const lookup = async (g: Grant, k: string): Promise<boolean> => {
    try {
      const expiresAt = await grantsDb.expiry(opts.pool, opts.nodeId, g, opts.clock.now());
      if (expiresAt !== undefined) {
        remember(g, expiresAt);
        return true;
      }
    } catch (err) {
      // Fail closed: a frame refused now costs the agent a retry, a wrong grant costs a session.
      opts.log.warn({ err: (err as Error).message, kind: g.kind }, "grant lookup failed; refusing");
      return false;
    }
    if (has(g)) return true; // granted here while the query ran
    if (denied.size >= MAX_DENIED) denied.clear();
    denied.set(k, opts.clock.now() + DENIED_MS);
    return false;
  };

  return {
    async load() {
      for (const row of await grantsDb.live(opts.pool, opts.nodeId, opts.clock.now())) remember(row, row.expires_at);
    },
    allows(g) {
      if (has(g)) return true;
      const k = keyOf(g);
      if ((denied.get(k) ?? 0) > opts.clock.now()) return false;
      let p = lookups.get(k);
      if (!p) {
        p = lookup(g, k).finally(() => lookups.delete(k));
        lookups.set(k, p);
      }
      return p;
    },
    hold(g) {
      const k = keyOf(g);
      holds.set(k, (holds.get(k) ?? 0) + 1);
      denied.delete(k);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const n = (holds.get(k) ?? 1) - 1;
        if (n > 0) holds.set(k, n);
        else holds.delete(k);
      };
    },
    async grant(g, ttlMs) {
      const expiresAt = opts.clock.now() + ttlMs;
      remember(g, expiresAt);
      await grantWriter(opts.pool, opts.log)({ nodeId: opts.nodeId, g, expiresAt });
    },
    has,
  };
}

/**
 * Grants a link's agent the subjects of what the relay asks it to do: a terminal session once the
 * agent has opened its PTY (held while the OpenTerminal is in flight, because the agent subscribes
 * before it answers), and an operation's progress subject as soon as its Execute is relayed (a
 * command job's output subject likewise, on its RunCommand).
 * `withdrawn` is told when an open failed and the session was never granted.
 */
export function grantOnRelay(
  grants: LinkGrants,
  opts: { terminalMs: number; progressMs?: number; clock: Clock; log: Logger; withdrawn(g: Grant): void },
): RelayObserver {
  const decodeRef = (decode: () => string): string | undefined => {
    try {
      const ref = decode();
      return REF_RE.test(ref) ? ref : undefined;
    } catch {
      return undefined; // the agent refuses a payload it cannot decode either
    }
  };
  return (method, payload, deadline) => {
    if (method === OPEN_TERMINAL) {
      const ref = decodeRef(() => fromBinary(OpenTerminalRequestSchema, payload).sessionId);
      if (!ref) return undefined;
      const g: Grant = { kind: "terminal", ref };
      const release = grants.hold(g);
      return async (ok) => {
        try {
          if (ok) await grants.grant(g, opts.terminalMs);
        } catch (err) {
          // Still allowed through this link (memory); another replica would refuse it after a reconnect.
          opts.log.error({ err: (err as Error).message, session_id: ref }, "terminal grant not stored");
        } finally {
          release();
          if (!ok && !grants.has(g)) opts.withdrawn(g);
        }
      };
    }
    const ref =
      method === EXECUTE
        ? decodeRef(() => executeOperationId(payload))
        : method === RUN_COMMAND
          ? decodeRef(() => fromBinary(RunCommandRequestSchema, payload).jobId)
          : undefined;
    if (!ref) return undefined;
    const ttl = Math.max(deadline - opts.clock.now(), 0) + (opts.progressMs ?? PROGRESS_GRANT_MS);
    // Allowed at once (progress and output flow before the answer); the answer waits until it is stored.
    const stored = grants
      .grant({ kind: "progress", ref }, ttl)
      .catch((err) => opts.log.error({ err: (err as Error).message, method, ref }, "progress grant not stored"));
    return () => stored;
  };
}
