import { z } from "zod";
import { baseConfigSchema } from "@orch/kit";

const seconds = (def: number) => z.number().positive().default(def);

export const terminalConfigSchema = baseConfigSchema.extend({
  terminal: z
    .object({
      /** Where asciicast files are written; shared (ReadWriteMany) storage when several replicas run. */
      transcript_dir: z.string().default(".orch/transcripts"),
      /** How long POST /terminal waits for the agent to spawn the PTY. */
      open_timeout_seconds: z.number().positive().max(25).default(10),
      /** Lifetime of an attach ticket (single use). */
      ticket_ttl_seconds: seconds(30),
      /** A session without input or output for this long is closed (an abandoned browser tab, say). */
      idle_timeout_seconds: seconds(900),
      /** A session is closed this long after it opened, whatever it is doing. */
      max_duration_seconds: seconds(28_800),
      /** The recording replica's lease on a session; another replica takes over once it lapses. */
      lease_seconds: seconds(15),
      /** The agent sends a heartbeat this often; the recorder sends keepalives as often. */
      heartbeat_seconds: seconds(5),
      /** No heartbeat or output from the agent for this long = the agent is gone: the session fails. */
      agent_silence_seconds: seconds(30),
      /** The agent kills a PTY whose recorder has been silent for this long (0 = never). */
      orphan_timeout_seconds: z.number().min(0).default(60),
      /** The agent ends a session this long after its last client detached (0 = only idle timeout). */
      detach_grace_seconds: z.number().min(0).default(300),
      /** How long the one-time pass of an approved terminal.open request stays usable (docs/approvals.md). */
      pass_ttl_seconds: seconds(3600),
      /** Pending transcript lines are written at least this often (a crash loses at most this much). */
      flush_interval_ms: z.number().int().min(10).max(1000).default(250),
    })
    .prefault({}),
});
export type TerminalConfig = z.infer<typeof terminalConfigSchema>;
