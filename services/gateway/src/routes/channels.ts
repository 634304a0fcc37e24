import { z } from "zod";
import type { JsonObject } from "@bufbuild/protobuf";
import { NotifyService } from "@orch/contracts";
import { invalid, rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { ChannelOut, DeliveryOut, TestOut, channelJson, deliveryJson } from "./channels-json.js";
import { ChannelId, Config, Name } from "./channels-schemas.js";

type NotifyClient = Client<typeof NotifyService>;

export function channelRoutes(ctx: GatewayContext) {
  const notify = rpcClient(ctx.nc, "notify", NotifyService, { timeoutMs: ctx.timeoutMs });
  return [...channelReadRoutes(notify), ...channelChangeRoutes(notify), ...channelDeliveryRoutes(ctx, notify)];
}

/** List, create and read channels. */
function channelReadRoutes(notify: NotifyClient) {
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
  ];
}

function channelChangeRoutes(notify: NotifyClient) {
  return [
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
  ];
}

/** Sending through a channel: the test send and the delivery log. */
function channelDeliveryRoutes(ctx: GatewayContext, notify: NotifyClient) {
  return [
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
