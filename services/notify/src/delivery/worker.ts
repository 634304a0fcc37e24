import { count } from "@orch/contracts";
import type { CredentialBox } from "../channels/crypto.js";
import { channelsDb, type ChannelRow } from "../db/channels.js";
import { deliveriesDb, type DeliveryRow } from "../db/deliveries.js";
import type { EventJson } from "../events.js";
import type { NotifyDeps } from "../deps.js";
import { attempt, type Outcome } from "./attempt.js";
import { nextAttemptAt } from "./backoff.js";
import { deliveryCounter } from "./metrics.js";
import type { Resolver } from "./ssrf.js";

export interface DeliveryWorker {
  /** Look for due deliveries now (new ones were just stored). */
  kick(): void;
  stop(): Promise<void>;
}

/**
 * Runs in every replica. Claims due deliveries (SKIP LOCKED + lease, see deliveriesDb.claim), sends
 * them, and records each outcome guarded by the claim, success first: a delivered row is never
 * claimed again, and a row whose worker died is retried only after its lease expires.
 */
export function startDeliveryWorker(deps: NotifyDeps, box: CredentialBox, resolver: Resolver): DeliveryWorker {
  const { pool, clock, log, events, config } = deps;
  const cfg = config.notify;
  const policy = { allowPrivate: cfg.allow_private_targets, timeoutMs: cfg.request_timeout_ms, resolver };
  let running = true;
  let wake: (() => void) | undefined;
  let kicked = false;
  const counted = deliveryCounter(deps.metrics);

  async function disableGone(d: DeliveryRow, ch: ChannelRow, o: Outcome & { kind: "gone" }) {
    await events.tx(async (db, emit) => {
      if (!(await deliveriesDb.markFailed(db, d.id, d.attempts, o.status, o.error))) return;
      if (!(await channelsDb.disable(db, ch.id, "receiver answered 410 Gone", clock.now()))) return;
      const cancelled = await deliveriesDb.cancelPending(db, ch.id, "channel disabled (410 Gone)");
      await emit({
        type: "channel.disabled",
        summary: `channel ${ch.name} disabled: its receiver answered 410 Gone`,
        actor: { id: "notify", name: "notify", type: "system" },
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

  async function giveUp(d: DeliveryRow, ch: ChannelRow, status: number, error: string) {
    await events.tx(async (db, emit) => {
      if (!(await deliveriesDb.markFailed(db, d.id, d.attempts, status, error))) return;
      await emit({
        type: "channel.delivery.failed",
        summary: `delivery of ${d.event_type} through channel ${ch.name} failed after ${count(d.attempts, "attempt")}: ${error.slice(0, 120)}`,
        actor: { id: "notify", name: "notify", type: "system" },
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

  async function deliver(d: DeliveryRow): Promise<void> {
    const ch = await channelsDb.byIdOrName(pool, d.channel_id);
    if (!ch) return; // deleted meanwhile; its deliveries went with it
    let creds: Record<string, unknown>;
    try {
      creds = box.open(ch.id, ch.credentials);
    } catch (err) {
      await giveUp(d, ch, 0, `credentials unreadable: ${(err as Error).message}`);
      counted(ch.channel_type, "failed");
      return;
    }
    const o = await attempt(
      {
        type: ch.channel_type,
        pub: ch.config,
        creds,
        event: d.event as unknown as EventJson,
        deliveryId: d.id,
        now: clock.now(),
      },
      policy,
    );
    const now = clock.now();
    const failed = o.kind === "retry" && d.attempts >= cfg.max_attempts;
    counted(ch.channel_type, failed ? "failed" : o.kind);
    switch (o.kind) {
      case "delivered":
        if (!(await deliveriesDb.markDelivered(pool, d.id, d.attempts, o.status, now)))
          log.warn({ delivery: d.id }, "delivered after the claim was lost");
        return;
      case "gone":
        return disableGone(d, ch, o);
      case "refused":
        log.warn({ channel: ch.id, delivery: d.id, reason: o.error }, "delivery target refused");
        return giveUp(d, ch, 0, o.error);
      case "retry":
        if (d.attempts >= cfg.max_attempts) return giveUp(d, ch, o.status, o.error);
        await deliveriesDb.markRetry(
          pool,
          d.id,
          d.attempts,
          o.status,
          o.snippet ? `${o.error}: ${o.snippet}` : o.error,
          nextAttemptAt(now, d.attempts, o.retryAfterMs, cfg.retry_base_ms, cfg.retry_max_ms),
        );
        log.debug(
          { channel: ch.id, delivery: d.id, attempt: d.attempts, status: o.status },
          "delivery will be retried",
        );
    }
  }

  async function round(): Promise<number> {
    const claimed = await deliveriesDb.claim(pool, clock.now(), cfg.lease_ms, cfg.batch_size);
    await Promise.all(
      claimed.map((d) =>
        deliver(d).catch((err) =>
          log.error(
            { err: (err as Error).message, delivery: d.id },
            "delivery bookkeeping failed; the lease will expire and it is retried",
          ),
        ),
      ),
    );
    return claimed.length;
  }

  const loop = (async () => {
    while (running) {
      let n = 0;
      try {
        kicked = false;
        n = await round();
      } catch (err) {
        log.warn({ err: (err as Error).message }, "delivery round failed");
      }
      if (n > 0 || kicked || !running) continue;
      let sleep = cfg.poll_ms;
      try {
        const due = await deliveriesDb.nextDue(pool);
        if (due !== undefined) sleep = Math.max(10, Math.min(sleep, due - clock.now()));
      } catch {
        /* the next round reports it */
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, sleep).unref();
      });
      wake = undefined;
    }
  })();

  return {
    kick() {
      kicked = true;
      wake?.();
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
    },
  };
}
