import type { ServerResponse } from "node:http";
import { fromBinary, type JsonObject } from "@bufbuild/protobuf";
import { z } from "zod";
import { AuditFeedSchema, AuditService, type AuditEvent, type AuditFilter, type StoredEvent } from "@orch/contracts";
import { invalid, rpcClient, unauthenticated, type CallOptions, type Client } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { bearerToken } from "../auth-cache.js";
import type { Credential, EndReason, LiveSessions } from "../live-sessions.js";
import { route } from "../route.js";

/** Published by the audit service after each commit (AuditFeed in proto/orch/v1/audit.proto). */
export const AUDIT_FEED_SUBJECT = "orch.audit.feed.events";
/** How often a live tail re-reads the store, covering feed messages lost in transit. */
const POLL_MS = 5_000;
const HEARTBEAT_MS = 15_000;
/** A client this far behind is disconnected; it resumes with Last-Event-ID and loses nothing. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** Live events held while the backlog is sent; beyond this they are left to the next poll. */
const MAX_HELD = 10_000;

const Ref = z.object({ id: z.string(), name: z.string(), type: z.string() });
export const AuditEventOut = z.object({
  id: z.string().describe("ULID; the last id of a page is the next cursor"),
  timestamp: z.string().describe("RFC 3339"),
  event_type: z.string(),
  severity: z.enum(["info", "warning", "error", "critical"]).or(z.string()),
  summary: z.string(),
  actor: Ref,
  target: Ref,
  metadata: z.record(z.string(), z.unknown()),
});
const RetentionOut = z.object({
  retention_days: z.number().int().nullable().describe("retention in force, days; null = pruning off"),
  source: z
    .enum(["override", "config"])
    .describe("override = set through this API; config = audit.retention_days of orch.yaml"),
  default_retention_days: z.number().int().nullable().describe("audit.retention_days of orch.yaml"),
});

export function auditEventJson(e: AuditEvent): z.infer<typeof AuditEventOut> {
  const ref = (r: { id: string; name: string; type: string } | undefined) => ({
    id: r?.id ?? "",
    name: r?.name ?? "",
    type: r?.type ?? "",
  });
  return {
    id: e.id,
    timestamp: e.timestamp,
    event_type: e.eventType,
    severity: e.severity,
    summary: e.summary,
    actor: ref(e.actor),
    target: ref(e.target),
    metadata: (e.metadata ?? {}) as JsonObject,
  };
}

// Query values are validated here rather than by zod so each failure carries its own code and names
// the parameter; the zod shapes below only document them (OpenAPI).
const param = (description: string) => z.unknown().optional().meta({ type: "string", description });
const FILTER_DOCS = {
  agent: param("agent node id or name, matched on the actor or target of type agent"),
  operator: param("operator id or name (the actor)"),
  event_type: param("exact dotted event type"),
  category: param(
    "event type prefix at a dot boundary: `agent` matches agent.approved and agent.tags.updated, not agents.x",
  ),
  after: param("earliest timestamp included, RFC 3339"),
  before: param("timestamp excluded (and everything later), RFC 3339"),
};
const ListQuery = z.object({
  ...FILTER_DOCS,
  cursor: param("ULID: the last event id of the previous page"),
  limit: z
    .unknown()
    .optional()
    .meta({ type: "integer", minimum: 1, maximum: 500, default: 50, description: "page size" }),
});
const StreamQuery = z.object({
  ...FILTER_DOCS,
  cursor: param("ULID: start after this event (the Last-Event-ID header takes precedence)"),
});
// Required, but checked in the handler so a missing value gets the same code as a bad one.
const PruneQuery = z
  .object({ before: param("RFC 3339; events strictly earlier are deleted") })
  .meta({ required: ["before"] });

const CODES: Record<string, string> = {
  after: "invalid_timestamp",
  before: "invalid_timestamp",
  cursor: "invalid_cursor",
  limit: "invalid_limit",
};
const codeOf = (name: string) => CODES[name] ?? "invalid_filter";
const FILTER_NAMES = Object.keys(FILTER_DOCS);
const CURSOR_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i;

/** The filter fields of orch.v1.AuditFilter. */
export type FilterValues = Partial<Omit<AuditFilter, "$typeName">>;

const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * Strict RFC 3339 (Date.parse alone accepts 2025-02-30 and 24:00); Unix ms, or undefined. An
 * unencoded `+` of an offset arrives as a space in a query string and is read as `+`.
 */
export function parseRfc3339(input: string): number | undefined {
  const s = input.replace(/(\d) (\d{2}:\d{2})$/, "$1+$2");
  const m = RFC3339_RE.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const sec = Number(m[6] ?? 0);
  const daysInMonth = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth || h > 23 || mi > 59 || sec > 59) return undefined;
  if (m[9] && (Number(m[10]) > 23 || Number(m[11]) > 59)) return undefined;
  const ms = Date.parse(
    `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? "00"}${(m[7] ?? "").slice(0, 4)}${m[8]!.toUpperCase()}`,
  );
  return Number.isFinite(ms) ? ms : undefined;
}

interface AuditQuery {
  filter: FilterValues;
  cursor?: string;
  limit?: number;
}

/** Parses the query string: every known parameter at most once, valid, non-empty; no others. */
export function parseAuditQuery(raw: unknown, allowed: readonly string[]): AuditQuery {
  const q = (raw ?? {}) as Record<string, unknown>;
  const out: AuditQuery = { filter: {} };
  for (const name of Object.keys(q)) {
    if (!allowed.includes(name))
      throw invalid("invalid_filter", `unknown query parameter '${name}' (allowed: ${allowed.join(", ")})`, {
        parameter: name,
      });
  }
  const value = (name: string): string | undefined => {
    const v = q[name];
    if (v === undefined) return undefined;
    if (typeof v !== "string") throw invalid(codeOf(name), `${name} must be given once`, { parameter: name });
    if (v === "") throw invalid(codeOf(name), `${name} must not be empty`, { parameter: name });
    return v;
  };
  const time = (name: string): number | undefined => {
    const v = value(name);
    if (v === undefined) return undefined;
    const ms = parseRfc3339(v);
    if (ms === undefined)
      throw invalid("invalid_timestamp", `${name} must be an RFC 3339 timestamp, e.g. 2025-01-31T12:00:00Z`, {
        parameter: name,
      });
    return Date.parse(v);
  };
  for (const name of ["agent", "operator", "event_type", "category"] as const) {
    const v = allowed.includes(name) ? value(name) : undefined;
    if (v === undefined) continue;
    if (name === "event_type") out.filter.eventType = v;
    else out.filter[name] = v;
  }
  if (allowed.includes("after")) {
    const after = time("after");
    if (after !== undefined) out.filter.after = after;
  }
  if (allowed.includes("before")) {
    const before = time("before");
    if (before !== undefined) out.filter.before = before;
  }
  if (allowed.includes("cursor")) {
    const cursor = value("cursor");
    if (cursor !== undefined && !CURSOR_RE.test(cursor))
      throw invalid("invalid_cursor", "cursor must be the id (ULID) of an audit event", { parameter: "cursor" });
    if (cursor !== undefined) out.cursor = cursor.toUpperCase();
  }
  if (allowed.includes("limit")) {
    const limit = value("limit");
    if (limit !== undefined) {
      const n = /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
      if (!(n >= 1 && n <= 500))
        throw invalid("invalid_limit", "limit must be an integer between 1 and 500", { parameter: "limit" });
      out.limit = n;
    }
  }
  return out;
}

/** The same predicate the audit service applies in SQL, for events arriving on the live feed. */
export function matchesFilter(f: FilterValues, e: AuditEvent): boolean {
  const is = (r: AuditEvent["actor"], type: string, v: string) => r?.type === type && (r.id === v || r.name === v);
  if (f.agent && !is(e.actor, "agent", f.agent) && !is(e.target, "agent", f.agent)) return false;
  if (f.operator && !is(e.actor, "operator", f.operator)) return false;
  if (f.eventType && e.eventType !== f.eventType) return false;
  if (f.category && e.eventType !== f.category && !e.eventType.startsWith(`${f.category}.`)) return false;
  const ts = Date.parse(e.timestamp);
  if (f.after !== undefined && !(ts >= f.after)) return false;
  if (f.before !== undefined && !(ts < f.before)) return false;
  return true;
}

interface TailDeps {
  ctx: GatewayContext;
  /** Open tails, so a gateway shutdown can end them. */
  registry: Set<AuditTail>;
  audit: Client<typeof AuditService>;
  call: CallOptions;
  filter: FilterValues;
  res: ServerResponse;
}

/**
 * Streams stored events after a starting point, then live ones, with no gap and no repeat:
 * subscribe to the feed first (holding what arrives), send the backlog page by page in storage
 * order, then send held and live events not yet covered. Every POLL_MS the store is read again
 * from the last position, so a feed message lost in transit (or never sent because the audit
 * service crashed between commit and publish) still reaches the client. Storage positions follow
 * commit order, so "seq <= position" means "already examined".
 */
class AuditTail {
  private position = 0;
  /** Sent from the feed, ahead of `position`: id → seq. */
  private readonly liveSent = new Map<string, number>();
  private held: StoredEvent[] | undefined = [];
  private closed = false;
  private polling = false;
  private timers: NodeJS.Timeout[] = [];
  private readonly sub;
  private release: (() => void) | undefined;
  /** Set when the stream's credential ended (logout, the operator's removal, expiry). */
  endedBy: EndReason | undefined;

  constructor(private readonly d: TailDeps) {
    d.registry.add(this);
    d.res.on("close", () => this.close());
    this.sub = d.ctx.nc.subscribe(AUDIT_FEED_SUBJECT, {
      callback: (err, msg) => {
        if (err || this.closed) return;
        try {
          for (const e of fromBinary(AuditFeedSchema, msg.data).events) this.onLive(e);
        } catch (e) {
          d.ctx.log.debug({ err: (e as Error).message }, "undecodable audit feed message");
        }
      },
    });
  }

  /** First page: validates the request (errors become problem+json before anything is sent). */
  async open(afterId: string | undefined) {
    try {
      return await this.d.audit.tail({ filter: this.d.filter, limit: 500, afterId: afterId ?? "" }, this.d.call);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  async run(first: { events: StoredEvent[]; position: number; hasMore: boolean }) {
    const { res } = this.d;
    if (res.socket?.destroyed) return this.close();
    res.write("retry: 2000\n\n");
    let page = first;
    for (;;) {
      for (const e of page.events) this.send(e);
      this.position = page.position;
      if (!page.hasMore || this.closed) break;
      page = await this.d.audit.tail({ filter: this.d.filter, limit: 500, afterSeq: this.position }, this.d.call);
    }
    const held = this.held ?? [];
    this.held = undefined;
    for (const e of held) this.onLive(e);
    if (this.closed) return;
    this.timers.push(
      setInterval(() => void this.poll(), POLL_MS),
      setInterval(() => this.write(": heartbeat\n\n"), HEARTBEAT_MS),
    );
  }

  private onLive(e: StoredEvent) {
    if (this.held) {
      if (this.held.length < MAX_HELD) this.held.push(e);
      return;
    }
    const id = e.event?.id;
    if (!id || e.seq <= this.position || this.liveSent.has(id) || !matchesFilter(this.d.filter, e.event!)) return;
    this.liveSent.set(id, e.seq);
    this.send(e);
  }

  private async poll() {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      for (;;) {
        const page = await this.d.audit.tail(
          { filter: this.d.filter, limit: 500, afterSeq: this.position },
          this.d.call,
        );
        for (const e of page.events) if (!this.liveSent.has(e.event?.id ?? "")) this.send(e);
        this.position = page.position;
        if (!page.hasMore || this.closed) break;
      }
      for (const [id, seq] of this.liveSent) if (seq <= this.position) this.liveSent.delete(id);
    } catch (err) {
      this.d.ctx.log.debug({ err: (err as Error).message }, "audit tail poll failed; retrying at the next interval");
    } finally {
      this.polling = false;
    }
  }

  private send(e: StoredEvent) {
    if (!e.event) return;
    this.write(`id: ${e.event.id}\nevent: audit\ndata: ${JSON.stringify(auditEventJson(e.event))}\n\n`);
  }

  private write(chunk: string) {
    const { res } = this.d;
    if (this.closed || res.destroyed) return;
    res.write(chunk);
    if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
  }

  /** Ends the stream with the credential that opened it; bound before anything is sent. */
  bindTo(live: LiveSessions, cred: Credential) {
    this.release = live.bind(cred, { kind: "audit_stream", end: (reason) => this.end(reason) });
  }

  /** An `error` event names why, then the stream ends; a reconnecting client gets 401. */
  end(reason: EndReason) {
    if (this.closed) return;
    this.endedBy = reason;
    const data = { code: reason, detail: "the credential this stream was opened with has ended; sign in again" };
    // Before the stream starts the response belongs to Fastify (the handler answers 401).
    if (this.d.res.headersSent) this.write(`event: error\ndata: ${JSON.stringify(data)}\n\n`);
    this.close();
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    this.release?.();
    this.d.registry.delete(this);
    for (const t of this.timers) clearInterval(t);
    this.sub.unsubscribe();
    // Before the stream starts the response belongs to Fastify (it sends the problem).
    if (this.d.res.headersSent && !this.d.res.writableEnded) this.d.res.end();
  }
}

export function auditRoutes(ctx: GatewayContext) {
  const audit = rpcClient(ctx.nc, "audit", AuditService, { timeoutMs: ctx.timeoutMs });
  const open = new Set<AuditTail>();
  const live = ctx.live;
  // Open streams would otherwise keep the server from closing.
  ctx.app.addHook("preClose", async () => {
    for (const t of open) t.close();
  });
  const listParams = [...FILTER_NAMES, "cursor", "limit"];
  const streamParams = [...FILTER_NAMES, "cursor"];
  const queryErrors = ["invalid_filter", "invalid_timestamp", "invalid_cursor"];

  return [
    route({
      method: "GET",
      path: "/api/v1/audit",
      auth: "operator",
      summary: "Query audit events, newest first",
      tags: ["audit"],
      query: ListQuery,
      responses: {
        200: z.object({ events: z.array(AuditEventOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      errors: { 400: [...queryErrors, "invalid_limit"] },
      async handler({ raw, call }) {
        const q = parseAuditQuery(raw.query, listParams);
        const r = await audit.listEvents({ filter: q.filter, limit: q.limit ?? 0, cursor: q.cursor ?? "" }, call);
        return {
          events: r.events.map(auditEventJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/audit",
      auth: "admin",
      summary: "Delete audit events strictly earlier than a timestamp",
      description:
        "Records an `audit.pruned` event (who, cutoff, count) afterwards. `audit.pruned` events themselves are never deleted.",
      tags: ["audit"],
      query: PruneQuery,
      responses: { 200: z.object({ deleted: z.number().int() }) },
      errors: { 400: ["invalid_timestamp"] },
      async handler({ raw, call }) {
        const q = parseAuditQuery(raw.query, ["before"]);
        if (q.filter.before === undefined)
          throw invalid("invalid_timestamp", "before is required (RFC 3339)", { parameter: "before" });
        const r = await audit.prune({ before: q.filter.before }, call);
        return { deleted: r.deleted };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/audit/retention",
      auth: "operator",
      summary: "The audit retention in force",
      tags: ["audit"],
      responses: { 200: RetentionOut },
      async handler({ call }) {
        return retentionJson(await audit.getRetention({}, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/audit/retention",
      auth: "admin",
      summary: "Set or clear the audit retention override",
      description:
        "An integer ≥ 1 sets the override; null clears it and falls back to `audit.retention_days` of orch.yaml (null there = pruning off). The hourly pruning job applies it.",
      tags: ["audit"],
      body: z.object({
        retention_days: z
          .unknown()
          .meta({ type: ["integer", "null"], minimum: 1, description: "days; null clears the override" }),
      }),
      responses: { 200: RetentionOut },
      errors: { 400: ["invalid_retention"] },
      async handler({ body, call }) {
        const v = body.retention_days;
        if (v !== null && typeof v !== "number")
          throw invalid("invalid_retention", "retention_days must be an integer ≥ 1 or null", {
            field: "retention_days",
          });
        return retentionJson(await audit.setRetention(v === null ? {} : { retentionDays: v }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/audit/stream",
      auth: "operator",
      summary: "Live tail of audit events (Server-Sent Events)",
      description:
        "text/event-stream: each event is `id: <event id>`, `event: audit`, `data: <audit event JSON>`; a comment every 15 s keeps the connection alive. Starts after `cursor` or the `Last-Event-ID` header (which wins), else now; a client that reconnects with Last-Event-ID misses nothing. Same filters as GET /audit.",
      tags: ["audit"],
      query: StreamQuery,
      responses: { 200: z.string().meta({ description: "text/event-stream" }) },
      errors: { 400: queryErrors },
      async handler({ raw, call, principal }, reply) {
        const q = parseAuditQuery(raw.query, streamParams);
        const header = raw.headers["last-event-id"];
        let after = q.cursor;
        if (typeof header === "string" && header !== "") {
          if (!CURSOR_RE.test(header))
            throw invalid("invalid_cursor", "Last-Event-ID must be the id (ULID) of an audit event", {
              parameter: "Last-Event-ID",
            });
          after = header.toUpperCase();
        }
        const tail = new AuditTail({ ctx, registry: open, audit, call, filter: q.filter, res: reply.raw });
        const token = bearerToken(raw.headers.authorization) ?? "";
        tail.bindTo(live, { operatorId: principal!.id, token, expiresAt: principal!.expiresAt });
        const first = await tail.open(after);
        if (tail.endedBy) throw unauthenticated("invalid_token", "the token is invalid, expired or revoked");
        reply.hijack();
        reply.raw.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          connection: "keep-alive",
          "x-accel-buffering": "no",
        });
        await tail.run(first).catch((err) => {
          ctx.log.debug({ err: (err as Error).message }, "audit stream ended");
          tail.close();
        });
        return reply;
      },
    }),
  ];
}

function retentionJson(r: {
  retentionDays?: number;
  source: string;
  defaultRetentionDays?: number;
}): z.infer<typeof RetentionOut> {
  return {
    retention_days: r.retentionDays ?? null,
    source: r.source === "override" ? "override" : "config",
    default_retention_days: r.defaultRetentionDays ?? null,
  };
}
