import { z } from "zod";
import { AuditService, type ErrorReason } from "@orch/contracts";
import { invalid, rpcClient, unauthenticated } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { requestToken } from "../console/session.js";
import { route } from "../route.js";
import { AuditTail } from "../sse/audit-tail.js";
import { auditEventJson, retentionJson } from "./audit-json.js";
import { parseAuditQuery, streamStart } from "./audit-query.js";
import {
  AuditPageOut,
  FILTER_NAMES,
  ListQuery,
  PruneQuery,
  RetentionIn,
  RetentionOut,
  StreamQuery,
} from "./audit-schemas.js";

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
  const queryErrors: ErrorReason[] = ["invalid_filter", "invalid_timestamp", "invalid_cursor"];

  return [
    route({
      method: "GET",
      path: "/api/v1/audit",
      auth: "operator",
      summary: "Query audit events, newest first",
      tags: ["audit"],
      query: ListQuery,
      responses: { 200: AuditPageOut },
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
      body: RetentionIn,
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
        const after = streamStart(q.cursor, raw.headers["last-event-id"]);
        const tail = new AuditTail({
          nc: ctx.nc,
          log: ctx.log,
          registry: open,
          audit,
          call,
          filter: q.filter,
          res: reply.raw,
        });
        const token = requestToken(raw, ctx.config.http)?.token ?? "";
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
