import { z } from "zod";
import { baseConfigSchema, isCidr } from "@orch/kit";
import { linkTlsIssues } from "./link/tls.js";

// An env variable carries a list as JSON or comma-separated.
const splitList = (v: string) =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

export const agentsConfigSchema = baseConfigSchema.extend({
  agents: z
    .object({
      /** Bind address of the gRPC agent link. */
      link_host: z.string().default("0.0.0.0"),
      link_port: z.number().int().min(0).max(65535).default(7443),
      /** PEM files (certificate or full chain, and its key): the link's TLS identity, required unless `insecure`. */
      tls_cert: z.string().default(""),
      tls_key: z.string().default(""),
      /** Optional PEM CA certificate(s) sent after tls_cert, when that file lacks them (cert-manager's ca.crt). */
      tls_ca: z.string().default(""),
      /** Plaintext link on explicit request only: agents cannot authenticate the server. */
      insecure: z.boolean().default(false),
      /** host:port announced in discovery datagrams; empty = link_host:link_port. */
      advertise_address: z.string().default(""),
      /** UDP port of discovery datagrams; a unicast target must use it (no probing of other ports). */
      discovery_port: z.number().int().min(1).max(65535).default(7444),
      /**
       * Networks (CIDRs) any operator may send unicast discovery into (ORCH_AGENTS_DISCOVERY_NETWORKS,
       * JSON array or comma-separated). Outside them unicast is admin-only, and never to loopback,
       * multicast, link-local or reserved space unless a network here covers it. Empty = operators may only broadcast.
       */
      discovery_networks: z
        .preprocess((v) => (typeof v === "string" ? splitList(v) : v), z.array(z.string()))
        .default([])
        .superRefine((nets, ctx) => {
          nets.forEach((n, i) => {
            const message = `'${n}' is not a network in CIDR notation (e.g. 10.1.0.0/16)`;
            if (!isCidr(n)) ctx.addIssue({ code: "custom", path: [i], message });
          });
        }),
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
      terminal_grant_hours: z
        .number()
        .positive()
        .max(24 * 365)
        .default(24),
    })
    .superRefine((agents, ctx) => {
      for (const i of linkTlsIssues(agents)) ctx.addIssue({ code: "custom", message: i.message, path: [i.key] });
    })
    .prefault({}),
  /** Published orch-agent releases (docs/agent-install.md). */
  releases: z
    .object({
      /** Directory of `<version>/manifest.json` + packages (ORCH_RELEASES_DIR, shared with the gateway); empty = none. */
      dir: z.string().default(""),
      /** How long an upgraded agent has to link up on the new version before the upgrade is reported failed. */
      upgrade_deadline_seconds: z.number().int().min(10).max(3600).default(120),
    })
    .prefault({}),
});
export type AgentsConfig = z.infer<typeof agentsConfigSchema>;
