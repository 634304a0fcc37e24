import { z } from "zod";
import type { JsonObject } from "@bufbuild/protobuf";
import { CHANNEL_NAME_RE, checkChannelName, NotifyService, type Channel, type Delivery } from "@orch/contracts";
import { invalid, rpcClient } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { route } from "../route.js";
import { pageQuery, ruled } from "../schemas.js";

const sec = (ms: number) => Math.floor(ms / 1000);

const ChannelOut = z.object({
  id: z.string(),
  name: z.string(),
  channel_type: z.enum(["webhook", "discord", "slack", "ntfy"]),
  config: z
    .record(z.string(), z.unknown())
    .describe("type-specific; credentials masked (a generated webhook secret is shown once, on create)"),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable(),
  created_at: z.number().int().describe("Unix seconds"),
  created_by: z.string(),
  updated_at: z.number().int().describe("Unix seconds"),
});

export function channelJson(c: Channel): z.infer<typeof ChannelOut> {
  return {
    id: c.id,
    name: c.name,
    channel_type: c.channelType as z.infer<typeof ChannelOut>["channel_type"],
    config: (c.config ?? {}) as Record<string, unknown>,
    enabled: c.enabled,
    disabled_reason: c.disabledReason || null,
    created_at: sec(c.createdAt),
    created_by: c.createdBy,
    updated_at: sec(c.updatedAt),
  };
}

const DeliveryOut = z.object({
  id: z.string(),
  channel_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  severity: z.string(),
  status: z.enum(["pending", "in_flight", "delivered", "failed", "suppressed", "cancelled"]),
  attempts: z.number().int(),
  next_attempt_at_ms: z.number().int().nullable(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at_ms: z.number().int(),
  delivered_at_ms: z.number().int().nullable(),
});

function deliveryJson(d: Delivery): z.infer<typeof DeliveryOut> {
  return {
    id: d.id,
    channel_id: d.channelId,
    event_id: d.eventId,
    event_type: d.eventType,
    severity: d.severity,
    status: d.status as z.infer<typeof DeliveryOut>["status"],
    attempts: d.attempts,
    next_attempt_at_ms: d.nextAttemptAt || null,
    last_status_code: d.lastStatusCode || null,
    last_error: d.lastError || null,
    created_at_ms: d.createdAt,
    delivered_at_ms: d.deliveredAt || null,
  };
}

const ChannelId = z.object({ id: z.string().min(1).max(128) });
const Name = ruled(checkChannelName, CHANNEL_NAME_RE);
const Config = z.record(z.string(), z.unknown());
const TestOut = z.object({
  delivered: z.boolean(),
  status_code: z.number().int().nullable(),
  response_snippet: z.string().nullable().describe("first 200 characters of the receiver's answer"),
  error: z.string().nullable(),
});

export function channelRoutes(ctx: GatewayContext) {
  const notify = rpcClient(ctx.nc, "notify", NotifyService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "GET",
      path: "/api/v1/channels",
      auth: "operator",
      summary: "List notification channels (credentials masked)",
      tags: ["channels"],
      query: pageQuery,
      responses: {
        200: z.object({ channels: z.array(ChannelOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      async handler({ query, call }) {
        const r = await notify.listChannels({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return {
          channels: r.channels.map(channelJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/channels",
      auth: "admin",
      summary: "Create a notification channel",
      description:
        "config per channel_type — webhook: {url, secret?, headers?}; discord: {webhook_url}; slack: {webhook_url}; ntfy: {server_url?, topic, token?, priority?}; every type: {min_severity?, event_types?}. A webhook created without a secret gets a generated whsec_ secret, returned in clear in this response only.",
      tags: ["channels"],
      body: z.object({ name: Name, channel_type: z.string().max(32), config: Config }),
      responses: { 201: ChannelOut },
      errors: { 400: ["invalid_request", "invalid_channel_type", "invalid_config"], 409: ["channel_exists"] },
      async handler({ body, call }) {
        return channelJson(
          await notify.createChannel(
            { name: body.name, channelType: body.channel_type, config: body.config as JsonObject },
            call,
          ),
        );
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/channels/{id}",
      auth: "operator",
      summary: "Get one channel (by id or name; credentials masked)",
      tags: ["channels"],
      params: ChannelId,
      responses: { 200: ChannelOut },
      errors: { 404: ["channel_not_found"] },
      async handler({ params, call }) {
        return channelJson(await notify.getChannel({ id: params.id }, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/channels/{id}",
      auth: "admin",
      summary: "Update a channel's name, config or enabled flag",
      description:
        "channel_type cannot change: it may be sent (e.g. echoing GET) only with its current value; a different value is refused with 400 channel_type_immutable. config replaces the stored config; credentials omitted or sent back masked keep their stored value; `secret: null` rotates a webhook secret (the new one is returned once).",
      tags: ["channels"],
      params: ChannelId,
      body: z.object({
        name: Name.nullable().optional(),
        config: Config.optional(),
        enabled: z.boolean().optional(),
        channel_type: z.unknown().optional().describe("optional; must equal the channel's current type"),
      }),
      responses: { 200: ChannelOut },
      errors: {
        400: ["invalid_request", "invalid_config", "channel_type_immutable"],
        404: ["channel_not_found"],
        409: ["channel_exists"],
      },
      async handler({ params, body, call }) {
        // A client echoing what GET returned sends the type back unchanged: accepted. Only a change is refused.
        if (body.channel_type !== undefined) {
          const current = await notify.getChannel({ id: params.id }, call);
          if (body.channel_type !== current.channelType)
            throw invalid("channel_type_immutable", "channel_type cannot be changed; create a new channel instead", {
              field: "channel_type",
            });
        }
        const req = {
          id: params.id,
          ...(body.name != null ? { name: body.name } : {}),
          ...(body.config ? { config: body.config as JsonObject } : {}),
          ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
        };
        return channelJson(await notify.updateChannel(req, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/channels/{id}",
      auth: "admin",
      summary: "Delete a channel and its deliveries",
      tags: ["channels"],
      params: ChannelId,
      responses: { 204: null },
      errors: { 404: ["channel_not_found"] },
      async handler({ params, call }) {
        await notify.deleteChannel({ id: params.id }, call);
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/channels/{id}/test",
      auth: "admin",
      summary: "Send a test notification through the channel now and report the receiver's answer",
      tags: ["channels"],
      params: ChannelId,
      responses: { 200: TestOut },
      errors: { 404: ["channel_not_found"] },
      async handler({ params, call }) {
        // The send itself may take the notify service's whole request timeout (10 s by default).
        const r = await notify.testChannel({ id: params.id }, { ...call, timeoutMs: Math.max(ctx.timeoutMs, 20_000) });
        return {
          delivered: r.delivered,
          status_code: r.statusCode || null,
          response_snippet: r.statusCode ? r.responseSnippet : null,
          error: r.error || null,
        };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/channels/{id}/deliveries",
      auth: "operator",
      summary: "List a channel's deliveries, newest first",
      tags: ["channels"],
      params: ChannelId,
      query: pageQuery.extend({
        status: z.enum(["pending", "in_flight", "delivered", "failed", "suppressed", "cancelled"]).optional(),
      }),
      responses: {
        200: z.object({ deliveries: z.array(DeliveryOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      errors: { 404: ["channel_not_found"] },
      async handler({ params, query, call }) {
        const r = await notify.listDeliveries(
          { channelId: params.id, status: query.status ?? "", limit: query.limit ?? 0, cursor: query.cursor ?? "" },
          call,
        );
        return {
          deliveries: r.deliveries.map(deliveryJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
  ];
}
