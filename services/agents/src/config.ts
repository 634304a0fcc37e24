import { z } from "zod";
import { baseConfigSchema } from "@orch/kit";

export const agentsConfigSchema = baseConfigSchema.extend({
  agents: z
    .object({
      /** Bind address of the gRPC agent link. */
      link_host: z.string().default("0.0.0.0"),
      link_port: z.number().int().min(0).max(65535).default(7443),
      /** PEM files; both set = the link speaks TLS. */
      tls_cert: z.string().default(""),
      tls_key: z.string().default(""),
      /** host:port announced in discovery datagrams; empty = link_host:link_port. */
      advertise_address: z.string().default(""),
      discovery_port: z.number().int().min(1).max(65535).default(7444),
      metrics_retention_days: z.number().positive().default(7),
      /** Sent to agents in Welcome; 0 = each agent keeps its own --metrics-interval. */
      metrics_interval_seconds: z.number().int().min(0).max(86_400).default(0),
      /** How often a replica proves it is alive, and after how long without proof it is declared dead. */
      replica_heartbeat_seconds: z.number().positive().default(5),
      replica_timeout_seconds: z.number().positive().default(20),
      /** Server-side gRPC keepalive: a silent peer is dropped after time + timeout. */
      keepalive_seconds: z.number().positive().default(10),
      keepalive_timeout_seconds: z.number().positive().default(5),
      /** A link must finish its handshake within this time. */
      handshake_timeout_seconds: z.number().positive().default(10),
      /** How long an agent may use a terminal session's bus subjects after opening it (longer than terminal.max_duration_seconds). */
      terminal_grant_hours: z.number().positive().max(24 * 365).default(24),
    })
    .prefault({}),
});
export type AgentsConfig = z.infer<typeof agentsConfigSchema>;
