import type { CredentialBox } from "../channels/crypto.js";
import { channelsDb } from "../db/channels.js";
import { deliveriesDb, type DeliveryRow } from "../db/deliveries.js";
import type { EventJson } from "../events.js";
import type { NotifyDeps } from "../deps.js";
import { attempt } from "./attempt.js";
import { nextAttemptAt } from "./backoff.js";
import { deliveryCounter } from "./metrics.js";
import { disableGone, giveUp } from "./settle.js";
import type { Resolver } from "./ssrf.js";
import { judge } from "./verdict.js";

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
  const { pool, clock, log, config } = deps;
  const cfg = config.notify;
  const policy = { allowPrivate: cfg.allow_private_targets, timeoutMs: cfg.request_timeout_ms, resolver };
  let running = true;
  let wake: (() => void) | undefined;
  let kicked = false;
  const counted = deliveryCounter(deps.metrics);

  async function deliver(d: DeliveryRow): Promise<void> {
    const ch = await channelsDb.byIdOrName(pool, d.channel_id);
    if (!ch) return; // deleted meanwhile; its deliveries went with it
    let creds: Record<string, unknown>;
    try {
      creds = box.open(ch.id, ch.credentials);
    } catch (err) {
      await giveUp(deps, d, ch, 0, `credentials unreadable: ${(err as Error).message}`);
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
    const { verdict, result } = judge(o, d.attempts, cfg.max_attempts);
    counted(ch.channel_type, result);
    switch (verdict.type) {
      case "delivered":
        if (!(await deliveriesDb.markDelivered(pool, d.id, d.attempts, verdict.status, now)))
          log.warn({ delivery: d.id }, "delivered after the claim was lost");
        return;
      case "gone":
        return disableGone(deps, d, ch, verdict);
      case "give_up":
        if (verdict.refused)
          log.warn({ channel: ch.id, delivery: d.id, reason: verdict.error }, "delivery target refused");
        return giveUp(deps, d, ch, verdict.status, verdict.error);
      case "retry":
        await deliveriesDb.markRetry(
          pool,
          d.id,
          d.attempts,
          verdict.status,
          verdict.error,
          nextAttemptAt(now, d.attempts, verdict.retryAfterMs, cfg.retry_base_ms, cfg.retry_max_ms),
        );
        log.debug(
          { channel: ch.id, delivery: d.id, attempt: d.attempts, status: verdict.status },
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
