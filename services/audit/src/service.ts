import { AuditService } from "@orch/contracts";
import { serveRpc, type Service } from "@orch/kit";
import type { AuditDeps } from "./deps.js";
import { createFeedPublisher } from "./feed.js";
import { queryHandlers } from "./handlers/query.js";
import { retentionHandlers } from "./handlers/retention.js";
import { createIngest } from "./ingest.js";
import { createPruner } from "./prune.js";
import { startRetentionJob } from "./retention-job.js";

export interface AuditServiceHandle extends Service {
  /** Applies the retention now (what the hourly job does). */
  runRetention(): Promise<number | null>;
}

export async function createAuditService(deps: AuditDeps): Promise<AuditServiceHandle> {
  const { config } = deps;
  const onStored = createFeedPublisher(deps.nc, deps.log);
  const prune = createPruner(deps, onStored);
  const ingest = createIngest({
    nc: deps.nc,
    pool: deps.pool,
    log: deps.log,
    metrics: deps.metrics,
    onStored,
    options: {
      consumer: config.audit.consumer,
      batchSize: config.audit.batch_size,
      maxAckPending: config.audit.max_ack_pending,
      ackWaitMs: config.audit.ack_wait_ms,
      stream: { replicas: config.nats.audit_stream_replicas, maxAgeDays: config.nats.audit_stream_max_age_days },
    },
  });
  const rpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "audit",
    service: AuditService,
    log: deps.log,
    handlers: { ...queryHandlers(deps), ...retentionHandlers(deps, { prune, onStored }) },
  });
  await ingest.start();
  const job = startRetentionJob(deps, prune);
  return {
    runRetention: job.runOnce,
    async stop() {
      job.stop();
      await rpc.stop();
      await ingest.stop();
    },
  };
}
