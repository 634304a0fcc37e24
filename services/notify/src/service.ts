import { NotifyService } from "@orch/contracts";
import { schedulePeriodic, serveRpc, type Service } from "@orch/kit";
import { credentialBox, credentialsKeyring } from "./channels/crypto.js";
import { resealCredentials } from "./channels/reseal.js";
import { startAuditConsumer } from "./consumer.js";
import type { NotifyDeps, NotifyOptions, NotifyRuntime } from "./deps.js";
import { systemResolver } from "./delivery/ssrf.js";
import { startDeliveryWorker } from "./delivery/worker.js";
import { channelHandlers } from "./handlers/channels.js";
import { notificationHandlers } from "./handlers/notifications.js";
import { windowHandlers } from "./handlers/windows.js";
import { activeOperators } from "./operators.js";

const DAY = 86_400_000;

export async function createNotifyService(deps: NotifyDeps, opts: NotifyOptions = {}): Promise<Service> {
  const cfg = deps.config.notify;
  const resolver = opts.resolver ?? systemResolver;
  // The config schema has validated the keys already (the service does not start without one).
  const ring = credentialsKeyring(cfg.credentials_keys, cfg.credentials_key);
  const box = credentialBox(ring, cfg.credentials_key);
  deps.log.info({ active_key: ring.active, key_ids: ring.ids }, "channel credentials keyring loaded");
  if (cfg.credentials_key)
    deps.log.warn("notify.credentials_key is deprecated: put the key into notify.credentials_keys");
  await resealCredentials(deps.pool, box, deps.log);
  const rt: NotifyRuntime = {
    deps,
    box,
    sendPolicy: { allowPrivate: cfg.allow_private_targets, timeoutMs: cfg.request_timeout_ms, resolver },
  };

  const worker = startDeliveryWorker(deps, box, resolver);
  const operators = activeOperators({
    nc: deps.nc,
    clock: deps.clock,
    timeoutMs: deps.config.nats.request_timeout_ms,
    ttlMs: cfg.operators_cache_ms,
  });
  const consumer = await startAuditConsumer(deps, operators, () => worker.kick());
  const rpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "notify",
    service: NotifyService,
    log: deps.log,
    handlers: { ...channelHandlers(rt), ...notificationHandlers(rt), ...windowHandlers(rt) },
  });

  const prune = schedulePeriodic(deps, "notify.prune", 3_600_000, async (c) => {
    const cutoff = deps.clock.now() - cfg.retention_days * DAY;
    await c.query("DELETE FROM notifications WHERE timestamp_ms < $1", [cutoff]);
    await c.query(
      "DELETE FROM deliveries WHERE created_at < $1 AND status IN ('delivered', 'failed', 'suppressed', 'cancelled')",
      [cutoff],
    );
    await c.query("DELETE FROM processed_events WHERE processed_at < $1", [cutoff]);
  });

  return {
    async stop() {
      prune.stop();
      await rpc.stop();
      await consumer.stop();
      await worker.stop();
    },
  };
}
