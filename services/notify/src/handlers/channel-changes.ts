import { invalid } from "@orch/kit";
import { isChannelType, prepareCreate, prepareUpdate, CHANNEL_TYPES } from "../channels/config.js";
import { channelsDb, type ChannelRow } from "../db/channels.js";
import { deliveriesDb } from "../db/deliveries.js";
import { toChannel } from "../convert.js";
import type { NotifyRuntime } from "../deps.js";
import { requireAdmin } from "./access.js";
import { checkName, filterOf, find, nameTaken, ref, type ChannelHandlers } from "./channel-common.js";

export function createChannel(rt: NotifyRuntime): ChannelHandlers["createChannel"] {
  const { events, clock, ids } = rt.deps;
  const { box } = rt;
  return async (req, ctx) => {
    requireAdmin(ctx);
    checkName(req.name);
    if (!isChannelType(req.channelType))
      throw invalid("invalid_channel_type", `channel_type must be one of ${CHANNEL_TYPES.join(", ")}`, {
        field: "channel_type",
      });
    const cfg = prepareCreate(req.channelType, (req.config ?? {}) as Record<string, unknown>);
    const now = clock.now();
    const id = ids.next();
    const row: ChannelRow = {
      id,
      name: req.name,
      channel_type: req.channelType,
      config: cfg.public,
      credentials: box.seal(id, cfg.credentials),
      enabled: true,
      disabled_reason: "",
      created_at: now,
      created_by: ctx.actor.id,
      updated_at: now,
    };
    await events
      .tx(async (db, emit) => {
        await channelsDb.insert(db, row);
        await emit({
          type: "channel.created",
          summary: `${req.channelType} channel ${row.name} created by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: ref(row),
          metadata: { channel_type: row.channel_type, ...filterOf(cfg.public) },
        });
      })
      .catch((err) => nameTaken(err, row.name));
    return toChannel(row, box, cfg.generatedSecret);
  };
}

export function updateChannel(rt: NotifyRuntime): ChannelHandlers["updateChannel"] {
  const { events, clock } = rt.deps;
  const { box } = rt;
  return async (req, ctx) => {
    requireAdmin(ctx);
    if (req.name !== undefined) checkName(req.name);
    const result = await events
      .tx(async (db, emit) => {
        const old = await find(db, req.id, true);
        const row: ChannelRow = { ...old, updated_at: clock.now() };
        const changed: string[] = [];
        let generated: string | undefined;
        if (req.name !== undefined && req.name !== old.name) {
          row.name = req.name;
          changed.push("name");
        }
        if (req.config !== undefined) {
          const cfg = prepareUpdate(
            old.channel_type,
            req.config as Record<string, unknown>,
            box.open(old.id, old.credentials),
          );
          row.config = cfg.public;
          row.credentials = box.seal(old.id, cfg.credentials);
          generated = cfg.generatedSecret;
          changed.push("config");
        }
        if (req.enabled !== undefined && req.enabled !== old.enabled) {
          row.enabled = req.enabled;
          row.disabled_reason = req.enabled ? "" : `disabled by ${ctx.actor.name}`;
          changed.push("enabled");
          if (!req.enabled) await deliveriesDb.cancelPending(db, old.id, "channel disabled");
        }
        await channelsDb.update(db, row);
        await emit({
          type: "channel.updated",
          summary: `channel ${row.name} updated by ${ctx.actor.name}${changed.length ? ` (${changed.join(", ")})` : ""}`,
          actor: ctx.actor,
          target: ref(row),
          metadata: {
            channel_type: row.channel_type,
            changed,
            enabled: row.enabled,
            secret_rotated: generated !== undefined,
          },
        });
        return { row, generated };
      })
      .catch((err) => nameTaken(err, req.name ?? ""));
    return toChannel(result.row, box, result.generated);
  };
}

export function deleteChannel(rt: NotifyRuntime): ChannelHandlers["deleteChannel"] {
  const { events } = rt.deps;
  return async (req, ctx) => {
    requireAdmin(ctx);
    await events.tx(async (db, emit) => {
      const row = await find(db, req.id, true);
      await channelsDb.remove(db, row.id);
      await emit({
        type: "channel.deleted",
        summary: `channel ${row.name} deleted by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: ref(row),
        metadata: { channel_type: row.channel_type },
      });
    });
    return {};
  };
}
