import { z } from "zod";
import { baseConfigSchema } from "@orch/kit";

export const stateConfigSchema = baseConfigSchema.extend({
  state: z
    .object({
      /** Operations of one fan-out in flight at once. */
      fanout_concurrency: z.number().int().min(1).max(10_000).default(50),
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
    })
    .prefault({}),
});
export type StateConfig = z.infer<typeof stateConfigSchema>;
