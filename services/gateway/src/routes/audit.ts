import { z } from "zod";
import { AuditService, type ErrorReason } from "@orch/contracts";
import { invalid, rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { AuditTail } from "../sse/audit-tail.js";
import { serveSse } from "../sse/serve.js";
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

type AuditClient = Client<typeof AuditService>;

export function auditRoutes(ctx: GatewayContext) {
  const audit = rpcClient(ctx.nc, "audit", AuditService, { timeoutMs: ctx.timeoutMs });
  const open = new Set<AuditTail>();
  // Open streams would otherwise keep the server from closing.
  ctx.app.addHook("preClose", async () => {
    for (const t of open) t.close();
  });
  const queryErrors: ErrorReason[] = ["invalid_filter", "invalid_timestamp", "invalid_cursor"];
  return [
    ...auditEventRoutes(audit, queryErrors),
    ...auditRetentionRoutes(audit),
    ...auditStreamRoutes(ctx, audit, open, queryErrors),
  ];
}

/** The log itself: read a page, prune. */
function auditEventRoutes(audit: AuditClient, queryErrors: ErrorReason[]) {
  const listParams = [...FILTER_NAMES, "cursor", "limit"];
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
  ];
}

function auditRetentionRoutes(audit: AuditClient) {
  return [
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
      summary: "Set the audit retention override, or turn pruning off",
      description:
        "An integer ≥ 1 sets the override (days); null sets an override that turns pruning off, whatever `audit.retention_days` of orch.yaml says. To return to the configuration file's value, `DELETE /api/v1/audit/retention`. The hourly pruning job applies it.",
      tags: ["audit"],
      body: RetentionIn,
      responses: { 200: RetentionOut },
      errors: { 400: ["invalid_retention"] },
      async handler({ body, call }) {
        const v = body.retention_days;
        // 0 is refused here: on the bus it means "remove the override" (the DELETE below).
        if (v !== null && (typeof v !== "number" || !Number.isInteger(v) || v < 1))
          throw invalid("invalid_retention", "retention_days must be an integer ≥ 1, or null to turn pruning off", {
            field: "retention_days",
          });
        return retentionJson(await audit.setRetention(v === null ? {} : { retentionDays: v }, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/audit/retention",
      auth: "admin",
      summary: "Remove the audit retention override: the configuration file's value applies again",
      description:
        "Afterwards `source` is `config` and `retention_days` is `audit.retention_days` of orch.yaml (null there = pruning off). Removing an override that is not set changes nothing and records nothing.",
      tags: ["audit"],
      responses: { 200: RetentionOut },
      async handler({ call }) {
        return retentionJson(await audit.setRetention({ useConfigDefault: true }, call));
      },
    }),
  ];
}

function auditStreamRoutes(ctx: GatewayContext, audit: AuditClient, open: Set<AuditTail>, queryErrors: ErrorReason[]) {
  const streamParams = [...FILTER_NAMES, "cursor"];
  return [
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
      async handler(req, reply) {
        const { raw, call } = req;
        const q = parseAuditQuery(raw.query, streamParams);
        const tail = new AuditTail({
          nc: ctx.nc,
          log: ctx.log,
          registry: open,
          audit,
          call,
          filter: q.filter,
          afterId: streamStart(q.cursor, raw.headers["last-event-id"]),
          res: reply.raw,
        });
        return serveSse(ctx, req, reply, tail);
      },
    }),
  ];
}
