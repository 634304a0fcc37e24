import { checkChannelName, type NotifyService } from "@orch/contracts";
import {
  keysetPage,
  conflict,
  invalid,
  notFound,
  pageCursor,
  pageLimit,
  type CallContext,
  type Handlers,
  type Queryable,
} from "@orch/kit";
import { isChannelType, prepareCreate, prepareUpdate, CHANNEL_TYPES } from "../channels/config.js";
import { channelsDb, type ChannelRow } from "../db/channels.js";
import { deliveriesDb, DELIVERY_STATUSES } from "../db/deliveries.js";
import { attempt } from "../delivery/attempt.js";
import { toChannel, toDelivery } from "../convert.js";
import { requireAdmin } from "./access.js";
import type { EventJson } from "../events.js";
import type { NotifyRuntime } from "../deps.js";

type ChannelHandlers = Pick<
  Handlers<typeof NotifyService>,
  "createChannel" | "listChannels" | "getChannel" | "updateChannel" | "deleteChannel" | "testChannel" | "listDeliveries"
>;

const checkName = (name: string) => {
  const bad = checkChannelName(name);
  if (bad) throw invalid(bad.reason, `name ${bad.message}`, { field: "name" });
};
// Events carry the filter, not the config: URLs may embed tokens.
const filterOf = (pub: Record<string, unknown>) => ({
  min_severity: (pub.min_severity as string | undefined) ?? "warning",
  event_types: (pub.event_types as string[] | undefined) ?? [],
});
const ref = (c: { id: string; name: string }) => ({ id: c.id, name: c.name, type: "channel" });

async function find(db: Queryable, id: string, forUpdate = false): Promise<ChannelRow> {
  const row = await channelsDb.byIdOrName(db, id, forUpdate);
  if (!row) throw notFound("channel_not_found", `no channel '${id}'`);
  return row;
}

function nameTaken(err: unknown, name: string): never {
  const e = err as { code?: string };
  if (e.code === "23505")
    throw conflict("channel_exists", `a channel named '${name}' already exists`, { field: "name" });
  throw err;
}

export function channelHandlers(rt: NotifyRuntime): ChannelHandlers {
  const { pool, events, clock, ids } = rt.deps;
  const { box } = rt;

  return {
    async createChannel(req, ctx) {
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
    },

    async listChannels(req) {
      const limit = pageLimit(req.limit);
      const rows = await channelsDb.page(pool, limit + 1, pageCursor(req.cursor, "ulid"));
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      return { channels: page.map((r) => toChannel(r, box)), nextCursor };
    },

    async getChannel(req) {
      return toChannel(await find(pool, req.id), box);
    },

    async updateChannel(req, ctx) {
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
    },

    async deleteChannel(req, ctx) {
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
    },

    async testChannel(req, ctx) {
      requireAdmin(ctx);
      const row = await find(pool, req.id);
      const now = clock.now();
      const event = testEvent(ids.next(), now, row, ctx);
      const o = await attempt(
        {
          type: row.channel_type,
          pub: row.config,
          creds: box.open(row.id, row.credentials),
          event,
          deliveryId: ids.next(),
          now,
        },
        rt.sendPolicy,
      );
      const delivered = o.kind === "delivered";
      const error = o.kind === "delivered" ? "" : o.error;
      await events.tx(async (_db, emit) => {
        await emit({
          type: "channel.tested",
          summary: `test message through channel ${row.name} ${delivered ? "delivered" : "not delivered"} (by ${ctx.actor.name})`,
          actor: ctx.actor,
          target: ref(row),
          metadata: { channel_type: row.channel_type, delivered, status_code: o.status, error },
        });
      });
      return { delivered, statusCode: o.status, responseSnippet: o.snippet, error };
    },

    async listDeliveries(req) {
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
    },
  };
}

/** What a test message carries: an ordinary event shape, marked as a test. */
export function testEvent(id: string, now: number, ch: ChannelRow, ctx: CallContext): EventJson {
  return {
    id,
    timestamp: new Date(now).toISOString(),
    event_type: "channel.tested",
    severity: "info",
    summary: `Test notification from the orchestrator through channel ${ch.name}`,
    actor: { id: ctx.actor.id, name: ctx.actor.name, type: ctx.actor.type },
    target: ref(ch),
    metadata: { test: true },
  };
}
