import { keysetPage, invalid, pageCursor, pageLimit } from "@orch/kit";
import { deliveriesDb, DELIVERY_STATUSES } from "../db/deliveries.js";
import { channelsDb } from "../db/channels.js";
import { toChannel, toDelivery } from "../convert.js";
import type { NotifyRuntime } from "../deps.js";
import { createChannel, deleteChannel, updateChannel } from "./channel-changes.js";
import { find, type ChannelHandlers } from "./channel-common.js";
import { testChannel } from "./channel-test.js";

export { testEvent } from "./channel-test.js";

/** The channel RPCs: changes (channel-changes.ts), test messages (channel-test.ts) and the reads. */
export function channelHandlers(rt: NotifyRuntime): ChannelHandlers {
  return {
    createChannel: createChannel(rt),
    listChannels: listChannels(rt),
    getChannel: getChannel(rt),
    updateChannel: updateChannel(rt),
    deleteChannel: deleteChannel(rt),
    testChannel: testChannel(rt),
    listDeliveries: listDeliveries(rt),
  };
}

export function listChannels(rt: NotifyRuntime): ChannelHandlers["listChannels"] {
  const { pool } = rt.deps;
  const { box } = rt;
  return async (req) => {
    const limit = pageLimit(req.limit);
    const rows = await channelsDb.page(pool, limit + 1, pageCursor(req.cursor, "ulid"));
    const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
    return { channels: page.map((r) => toChannel(r, box)), nextCursor };
  };
}

export function getChannel(rt: NotifyRuntime): ChannelHandlers["getChannel"] {
  const { pool } = rt.deps;
  const { box } = rt;
  return async (req) => {
    return toChannel(await find(pool, req.id), box);
  };
}

export function listDeliveries(rt: NotifyRuntime): ChannelHandlers["listDeliveries"] {
  const { pool } = rt.deps;
  return async (req) => {
    const limit = pageLimit(req.limit);
    const cursor = pageCursor(req.cursor, "ulid");
    if (req.status && !(DELIVERY_STATUSES as readonly string[]).includes(req.status))
      throw invalid("invalid_status", `status must be one of ${DELIVERY_STATUSES.join(", ")}`, {
        parameter: "status",
      });
    const ch = await find(pool, req.channelId);
    const rows = await deliveriesDb.page(pool, ch.id, { status: req.status, limit: limit + 1, before: cursor });
    const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
    return { deliveries: page.map(toDelivery), nextCursor };
  };
}
