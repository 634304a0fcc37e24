import { count } from "@orch/contracts";
import type { ChannelRow } from "../db/channels.js";
import { channelsDb } from "../db/channels.js";
import { deliveriesDb, type DeliveryRow } from "../db/deliveries.js";
import type { NotifyDeps } from "../deps.js";

const NOTIFY = { id: "notify", name: "notify", type: "system" };

/** 410 Gone: fails the delivery, disables the channel and cancels its pending deliveries. */
export async function disableGone(
  deps: NotifyDeps,
  d: DeliveryRow,
  ch: ChannelRow,
  o: { status: number; error: string },
): Promise<void> {
  const { events, clock, log } = deps;
  await events.tx(async (db, emit) => {
    if (!(await deliveriesDb.markFailed(db, d.id, d.attempts, o.status, o.error))) return;
    if (!(await channelsDb.disable(db, ch.id, "receiver answered 410 Gone", clock.now()))) return;
    const cancelled = await deliveriesDb.cancelPending(db, ch.id, "channel disabled (410 Gone)");
    await emit({
      type: "channel.disabled",
      summary: `channel ${ch.name} disabled: its receiver answered 410 Gone`,
      actor: NOTIFY,
      target: { id: ch.id, name: ch.name, type: "channel" },
      metadata: {
        channel_type: ch.channel_type,
        delivery_id: d.id,
        event_id: d.event_id,
        cancelled_deliveries: cancelled,
      },
    });
  });
  log.warn({ channel: ch.id, delivery: d.id }, "channel disabled after 410 Gone");
}

/** Fails the delivery for good (guarded by the claim). */
export async function giveUp(
  deps: NotifyDeps,
  d: DeliveryRow,
  ch: ChannelRow,
  status: number,
  error: string,
): Promise<void> {
  await deps.events.tx(async (db, emit) => {
    if (!(await deliveriesDb.markFailed(db, d.id, d.attempts, status, error))) return;
    await emit({
      type: "channel.delivery.failed",
      summary: `delivery of ${d.event_type} through channel ${ch.name} failed after ${count(d.attempts, "attempt")}: ${error.slice(0, 120)}`,
      actor: NOTIFY,
      target: { id: ch.id, name: ch.name, type: "channel" },
      metadata: {
        channel_type: ch.channel_type,
        delivery_id: d.id,
        event_id: d.event_id,
        event_type: d.event_type,
        attempts: d.attempts,
        last_status_code: status,
        last_error: error.slice(0, 500),
      },
    });
  });
}
