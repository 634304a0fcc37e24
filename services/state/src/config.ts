import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { SOURCE_INTERVAL_DEFAULT_S, SOURCE_INTERVAL_MAX_S, SOURCE_INTERVAL_MIN_S } from "@orch/contracts";
import { baseConfigSchema, parseKeyring } from "@orch/kit";

export const stateConfigSchema = baseConfigSchema.extend({
  state: z
    .object({
      /**
       * Operations of one fan-out in flight at once. An operation mostly waits for its agent, so
       * this bounds a fan-out's pace (200 in flight at ~40 ms each ≈ 5,000 operations/s) and the
       * size of the group commits that end them.
       */
      fanout_concurrency: z.number().int().min(1).max(10_000).default(200),
      /** Every operation ends by this deadline (→ timed_out), also across restarts. */
      operation_timeout_seconds: z.number().int().min(1).max(86_400).default(600),
      /** Scheduled drift checks of every agent with a snapshot; 0 = off. */
      drift_interval_seconds: z.number().int().min(0).default(3600),
      /** Drift checks in flight at once during a scheduled pass. */
      drift_concurrency: z.number().int().min(1).max(1000).default(10),
      /** How often stale operations and interrupted fan-outs are swept. */
      sweep_interval_seconds: z.number().int().min(1).max(3600).default(15),
      /** Agents of fleet command runs in flight at once (a long command holds its slot). */
      command_concurrency: z.number().int().min(1).max(100_000).default(1000),
      /** stdout and stderr kept per agent of a command run, each. */
      command_output_cap_bytes: z.number().int().min(1024).max(1_048_576).default(65_536),
      /** At most one enforcement re-apply per assignment and agent per this interval. */
      enforce_interval_seconds: z.number().int().min(1).max(604_800).default(900),
      /**
       * Keyring sealing git sources' credentials and webhook secrets (AES-256-GCM),
       * `id:base64key[,id:base64key...]`, active key first, the secrets.keys format
       * (ORCH_STATE_SOURCE_KEYS). Empty: creating a source answers source_keys_unset.
       */
      source_keys: z.string().default(""),
      /** Where each source's fetched repository is cached (a bare repository per source). */
      sources_dir: z.string().min(1).default(join(tmpdir(), "orch-sources")),
      /** Allow file:// source URLs (development and tests; a replica reads its own disk). */
      sources_allow_file_urls: z.boolean().default(false),
      /** How often due sources are looked for (scheduled syncs and queued webhook syncs). */
      sources_tick_ms: z.number().int().min(100).max(60_000).default(1000),
      /**
       * How long a forge webhook delivery is remembered (by delivery id and body hash): the same
       * delivery again within this window answers 202 without syncing; after it, it is accepted again.
       */
      sources_webhook_replay_window_hours: z.number().int().min(1).max(8760).default(168),
      /** Largest blob an upload may store (module file sources); the issue's floor is 1 GiB. */
      blob_max_bytes: z
        .number()
        .int()
        .min(1024 * 1024)
        .max(64 * 1024 ** 3)
        .default(1024 ** 3),
      /** An upload no chunk has reached for this long was cut off: the sweeper drops it and its chunks. */
      blob_upload_stale_seconds: z.number().int().min(10).max(86_400).default(3600),
      /**
       * A blob no module and no kept module version names is deleted once it was stored this long
       * ago (hourly, blobs/sweep.ts): long enough for the module that will name it to be uploaded.
       */
      blob_gc_grace_seconds: z.number().int().min(60).max(31_536_000).default(604_800),
      /** Timeout of one git command (fetch, ls-tree, cat-file). */
      sources_git_timeout_ms: z.number().int().min(1000).max(600_000).default(60_000),
      /** Sync period of a source created without interval_s. */
      sources_default_interval_s: z
        .number()
        .int()
        .min(SOURCE_INTERVAL_MIN_S)
        .max(SOURCE_INTERVAL_MAX_S)
        .default(SOURCE_INTERVAL_DEFAULT_S),
    })
    .prefault({})
    .superRefine((st, ctx) => {
      // A malformed keyring stops the service at start, naming the setting.
      if (st.source_keys.trim() === "") return;
      try {
        parseKeyring(st.source_keys, "ORCH_STATE_SOURCE_KEYS");
      } catch (err) {
        ctx.addIssue({ code: "custom", path: ["source_keys"], message: (err as Error).message });
      }
    }),
});
export type StateConfig = z.infer<typeof stateConfigSchema>;
