import { z } from "zod";
import { Severities } from "@orch/contracts";
import { baseConfigSchema } from "@orch/kit";
import { credentialsKeyring } from "./channels/crypto.js";

export const notifyConfigSchema = baseConfigSchema.extend({
  notify: z
    .object({
      /** Events at or above this severity become per-operator notifications. */
      min_severity: z.enum(Severities).default("warning"),
      /** Allow channel targets on loopback, private, link-local, CGNAT and metadata addresses (ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS). */
      allow_private_targets: z.boolean().default(false),
      /** Attempts per delivery before it is marked failed (channel.delivery.failed). */
      max_attempts: z.number().int().min(1).max(100).default(8),
      /** First retry delay; doubles per attempt, with jitter. */
      retry_base_ms: z.number().int().positive().default(30_000),
      /** Longest retry delay, also the cap on a receiver's Retry-After. */
      retry_max_ms: z.number().int().positive().default(3_600_000),
      /** Timeout of one outgoing HTTP request (connect to last byte). */
      request_timeout_ms: z.number().int().positive().default(10_000),
      /** How long a claimed delivery stays in flight before another worker may retry it (> request_timeout_ms). */
      lease_ms: z.number().int().positive().default(60_000),
      /** How often the delivery worker looks for due deliveries when nothing woke it. */
      poll_ms: z.number().int().positive().default(1000),
      /** Deliveries claimed per worker round. */
      batch_size: z.number().int().min(1).max(500).default(20),
      /** How long the active-operator list from the auth service is reused. */
      operators_cache_ms: z.number().int().min(0).default(10_000),
      /**
       * Keyring sealing channel credentials (AES-256-GCM), `id:base64key[,id:base64key...]`, active key
       * first, the same format as secrets.keys (ORCH_NOTIFY_CREDENTIALS_KEYS). Required: credentials
       * are never stored in clear.
       */
      credentials_keys: z.string().default(""),
      /** Deprecated single key (base64 or 64 hex chars); still read, as key id `legacy` after credentials_keys. */
      credentials_key: z.string().default(""),
      /** Notifications, finished deliveries and processed-event ids older than this are pruned. */
      retention_days: z.number().int().min(1).default(90),
    })
    .prefault({})
    .superRefine((n, ctx) => {
      // Checked here so a missing or malformed key stops the service at start, naming the setting.
      try {
        credentialsKeyring(n.credentials_keys, n.credentials_key);
      } catch (err) {
        ctx.addIssue({ code: "custom", path: ["credentials_keys"], message: (err as Error).message });
      }
    }),
});
export type NotifyConfig = z.infer<typeof notifyConfigSchema>;
