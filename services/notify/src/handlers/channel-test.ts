import type { CallContext } from "@orch/kit";
import type { ChannelRow } from "../db/channels.js";
import { attempt } from "../delivery/attempt.js";
import type { NotifyRuntime } from "../deps.js";
import type { EventJson } from "../events.js";
import { requireAdmin } from "./access.js";
import { find, ref, type ChannelHandlers } from "./channel-common.js";

export function testChannel(rt: NotifyRuntime): ChannelHandlers["testChannel"] {
  const { pool, events, clock, ids } = rt.deps;
  const { box } = rt;
  return async (req, ctx) => {
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
