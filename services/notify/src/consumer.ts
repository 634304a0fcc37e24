import { fromBinary } from "@bufbuild/protobuf";
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JsMsg,
} from "@nats-io/jetstream";
import { AuditEventSchema, isUnnotified } from "@orch/contracts";
import { AUDIT_STREAM, ensureAuditStream, withTx } from "@orch/kit";
import { atLeast, channelWants } from "./channels/config.js";
import { channelsDb } from "./db/channels.js";
import { deliveriesDb } from "./db/deliveries.js";
import { notificationsDb } from "./db/notifications.js";
import { windowsDb } from "./db/windows.js";
import { eventJson, eventTimeMs, type EventJson } from "./events.js";
import type { ActiveOperators } from "./operators.js";
import type { NotifyDeps } from "./service.js";

export const CONSUMER_NAME = "notify";

// Events about a channel's own failures are not sent through that channel: it would loop.
const SELF_EVENTS = new Set(["channel.delivery.failed", "channel.disabled"]);

export interface AuditConsumer {
  stop(): Promise<void>;
}

/**
 * Turns AUDIT events into notifications and deliveries. Durable consumer `notify` with explicit
 * ack; the processed_events row is written in the same transaction as the notifications and
 * deliveries, so a redelivered message (crash before the ack) changes nothing.
 */
export async function startAuditConsumer(
  deps: NotifyDeps,
  operators: ActiveOperators,
  onPending: () => void,
): Promise<AuditConsumer> {
  const { nc, log, config, pool, ids, clock } = deps;
  await ensureAuditStream(nc, {
    replicas: config.nats.audit_stream_replicas,
    maxAgeDays: config.nats.audit_stream_max_age_days,
  });
  const jsm = await jetstreamManager(nc, { timeout: 5000 });
  try {
    await jsm.consumers.info(AUDIT_STREAM, CONSUMER_NAME);
  } catch {
    try {
      // The first start begins with new events; afterwards the durable keeps its position across restarts.
      await jsm.consumers.add(AUDIT_STREAM, {
        durable_name: CONSUMER_NAME,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.New,
        filter_subject: "audit.>",
        ack_wait: 30_000_000_000,
        max_ack_pending: 256,
      });
    } catch (err) {
      if (!/already in use|exists/i.test((err as Error).message)) throw err;
    }
  }

  async function handle(ev: EventJson): Promise<void> {
    if (ev.event_type === "operator.created" || ev.event_type === "operator.removed") operators.invalidate();
    // Flagged events are recorded by audit only, whatever severity the inbox or a channel asks for.
    const quiet = isUnnotified(ev.metadata);
    const notify = !quiet && atLeast(ev.severity, config.notify.min_severity);
    const operatorIds = notify ? await operators.ids() : [];
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

  const js = jetstream(nc, { timeout: 5000 });
  let running = true;
  let messages: ConsumerMessages | undefined;
  const processMsg = async (m: JsMsg) => {
    let ev: EventJson;
    try {
      ev = eventJson(fromBinary(AuditEventSchema, m.data));
    } catch (err) {
      log.warn({ err: (err as Error).message, subject: m.subject }, "undecodable audit message skipped");
      m.term();
      return;
    }
    try {
      await handle(ev);
      m.ack();
    } catch (err) {
      log.warn({ err: (err as Error).message, event_id: ev.id }, "event not processed yet; will be redelivered");
      m.nak(1000);
    }
  };
  const loop = (async () => {
    let backoff = 200;
    while (running) {
      try {
        const consumer = await js.consumers.get(AUDIT_STREAM, CONSUMER_NAME);
        messages = await consumer.consume({ max_messages: 64 });
        backoff = 200;
        for await (const m of messages) {
          await processMsg(m);
          if (!running) break;
        }
        if (running) await new Promise((r) => setTimeout(r, backoff));
      } catch (err) {
        if (!running) break;
        log.warn({ err: (err as Error).message }, "audit consumer interrupted; resuming");
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 5000);
      }
    }
  })();

  return {
    async stop() {
      running = false;
      await messages?.close().catch(() => {});
      await loop;
    },
  };
}
