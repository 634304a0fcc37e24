import { fromBinary } from "@bufbuild/protobuf";
import { DeliverPolicy } from "@nats-io/jetstream";
import { addressedTo, AuditEventSchema, isUnnotified } from "@orch/contracts";
import {
  AUDIT_STREAM,
  createDurableConsumer,
  ensureAuditStream,
  PoisonMessage,
  registerConsumerMetrics,
  retryStartup,
  withTx,
} from "@orch/kit";
import { atLeast, channelWants } from "./channels/config.js";
import { channelsDb } from "./db/channels.js";
import { deliveriesDb } from "./db/deliveries.js";
import { notificationsDb } from "./db/notifications.js";
import { windowsDb } from "./db/windows.js";
import { eventJson, eventTimeMs, type EventJson } from "./events.js";
import type { ActiveOperators } from "./operators.js";
import type { NotifyDeps } from "./deps.js";

export const CONSUMER_NAME = "notify";

// Events about a channel's own failures are not sent through that channel: it would loop.
const SELF_EVENTS = new Set(["channel.delivery.failed", "channel.disabled"]);

export interface AuditConsumer {
  stop(): Promise<void>;
}

/**
 * Turns AUDIT events into notifications and deliveries. Durable consumer `notify` with explicit
 * ack; the processed_events row is written in the same transaction as the notifications and
 * deliveries, so a redelivered message (crash before the ack) changes nothing. A failed event is
 * redelivered after 1 s; an undecodable message is terminated; a deleted consumer is recreated.
 */
export async function startAuditConsumer(
  deps: NotifyDeps,
  operators: ActiveOperators,
  onPending: () => void,
): Promise<AuditConsumer> {
  const { nc, log, config, pool, ids, clock } = deps;
  const consumer = createDurableConsumer({
    nc,
    log,
    consumer: {
      stream: AUDIT_STREAM,
      durable: CONSUMER_NAME,
      // The first start begins with new events; afterwards the durable keeps its position across restarts.
      deliverPolicy: DeliverPolicy.New,
      filterSubject: "audit.>",
      ackWaitMs: 30_000,
      maxAckPending: 256,
    },
    ensureStream: () =>
      ensureAuditStream(nc, {
        replicas: config.nats.audit_stream_replicas,
        maxAgeDays: config.nats.audit_stream_max_age_days,
      }),
    maxMessages: 64,
    nakDelayMs: 1000,
    handle: async (m) => {
      let ev: EventJson;
      try {
        ev = eventJson(fromBinary(AuditEventSchema, m.data));
      } catch (err) {
        throw new PoisonMessage(`undecodable audit message: ${(err as Error).message}`);
      }
      await handle(ev);
    },
  });
  // Created before the service is ready (it starts with new events). On a cluster electing the
  // stream's leader one JetStream API call can time out: retry rather than fail the start.
  await retryStartup(() => consumer.ensure(), log, "audit consumer");
  registerConsumerMetrics(deps.metrics, nc, { stream: AUDIT_STREAM, durable: CONSUMER_NAME });

  /** An event addressed to named operators reaches those (still active) whatever its severity. */
  async function inboxFor(ev: EventJson): Promise<string[]> {
    const named = addressedTo(ev.metadata);
    if (named) {
      const active = new Set(await operators.ids());
      return [...new Set(named)].filter((id) => active.has(id));
    }
    return atLeast(ev.severity, config.notify.min_severity) ? operators.ids() : [];
  }

  async function handle(ev: EventJson): Promise<void> {
    if (ev.event_type === "operator.created" || ev.event_type === "operator.removed") operators.invalidate();
    // Flagged events are recorded by audit only, whatever severity the inbox or a channel asks for.
    const quiet = isUnnotified(ev.metadata);
    const operatorIds = quiet ? [] : await inboxFor(ev);
    const channels = (quiet ? [] : await channelsDb.enabled(pool)).filter(
      (c) =>
        channelWants(c.config, ev.event_type, ev.severity) &&
        !(SELF_EVENTS.has(ev.event_type) && ev.target.type === "channel" && ev.target.id === c.id),
    );
    const now = clock.now();
    const at = eventTimeMs(ev, now);
    let pending = 0;
    await withTx(pool, async (db) => {
      const fresh = await db.query(
        "INSERT INTO processed_events (event_id, processed_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        [ev.id, now],
      );
      if (!fresh.rowCount) return;
      if (ev.event_type === "operator.removed" && ev.target.id) await notificationsDb.removeOperator(db, ev.target.id);
      await notificationsDb.insertMany(
        db,
        operatorIds.map((operator_id) => ({
          id: ids.next(),
          operator_id,
          event_id: ev.id,
          event_type: ev.event_type,
          severity: ev.severity,
          summary: ev.summary,
          timestamp_ms: at,
          read_at: null,
        })),
      );
      if (channels.length === 0) return;
      // The window is judged at the event's time: an event from inside a window stays suppressed even if processed after it.
      const window = await windowsDb.activeAt(db, at);
      for (const c of channels) {
        await deliveriesDb.insert(db, {
          id: ids.next(),
          channel_id: c.id,
          event_id: ev.id,
          event_type: ev.event_type,
          severity: ev.severity,
          event: ev as unknown as Record<string, unknown>,
          status: window ? "suppressed" : "pending",
          next_attempt_at: now,
          created_at: now,
          last_error: window ? `suppressed by maintenance window ${window.id}` : "",
        });
        if (!window) pending++;
      }
    });
    if (pending > 0) onPending();
  }

  consumer.start();
  return { stop: () => consumer.stop() };
}
