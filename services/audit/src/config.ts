import { z } from "zod";
import { baseConfigSchema } from "@orch/kit";

export const auditConfigSchema = baseConfigSchema.extend({
  audit: z
    .object({
      /** Days events are kept when no override is set through the API; null = pruning off. */
      retention_days: z.number().int().min(1).nullable().default(null),
      /** How often the retention job runs. */
      prune_interval_minutes: z.number().positive().default(60),
      /** Delay of the first run after start (a service restarted more often than hourly still prunes). */
      prune_start_delay_seconds: z.number().min(0).default(5),
      /** Durable consumer name on the AUDIT stream. */
      consumer: z
        .string()
        .regex(/^[A-Za-z0-9_-]+$/)
        .default("audit"),
      /** Events inserted per statement. */
      batch_size: z.number().int().min(1).max(5000).default(1000),
      /** Unacknowledged events the stream hands out at once (bounds memory while Postgres is down). */
      max_ack_pending: z.number().int().min(1).default(10_000),
      /** Redelivery delay of an event that was delivered but not acknowledged (crash before ack). */
      ack_wait_ms: z.number().int().min(1000).default(30_000),
    })
    .prefault({}),
});
export type AuditConfig = z.infer<typeof auditConfigSchema>;
