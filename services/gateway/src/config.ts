import { z } from "zod";
import { baseConfigSchema } from "@orch/kit";

export const gatewayConfigSchema = baseConfigSchema.extend({
  http: z
    .object({
      port: z.number().int().min(0).max(65535).default(8080),
      host: z.string().default("0.0.0.0"),
      /** Largest accepted request body, bytes (module content is capped at 256 KiB by the state service). */
      body_limit: z.number().int().positive().default(1_048_576),
      /**
       * Base URL clients use to reach this gateway (ws_url is built from it). Empty = the address
       * the connection arrived on; never the request's Host header, which the client chooses.
       */
      public_url: z
        .string()
        .regex(/^(https?:\/\/[^/?#\s@]+(\/[^?#\s]*)?)?$/, "must be an http(s) URL without query, fragment, credentials")
        .default(""),
      /** Origins allowed to open terminal WebSockets; empty = same host as the request. */
      allowed_origins: z.array(z.string()).default([]),
      trust_proxy: z.boolean().default(false),
      /** Built web console (index.html + assets/) served at /; empty = the repository's web/dist. */
      console_dir: z.string().default(""),
    })
    .prefault({}),
  gateway: z
    .object({
      /** Services reported by GET /status. */
      services: z.array(z.string()).default(["auth", "audit", "agents", "secrets", "state", "terminal", "notify"]),
      /** How long a validated token stays cached; revocations are also broadcast, this bounds staleness if one is missed. */
      token_cache_ttl_ms: z.number().int().positive().default(60_000),
      token_cache_size: z.number().int().positive().default(10_000),
      /** Login attempts (challenge + verify) per client address per minute. */
      auth_rate_limit_per_minute: z.number().int().positive().default(60),
      /** Fleet command runs are admin-only unless this grants them to every operator. */
      operators_may_run_commands: z.boolean().default(false),
    })
    .prefault({}),
  /** orch-agent packages served under /install (docs/agent-install.md). */
  releases: z
    .object({
      /** Directory of `<version>/manifest.json` + packages (ORCH_RELEASES_DIR, shared with the agents service); empty = none. */
      dir: z.string().default(""),
      /**
       * The release public key (Ed25519 SPKI PEM): embedded in /install/agent.sh and served at
       * /install/release.pub; a release whose stored manifest.json.sig does not verify with it is not served.
       */
      public_key_file: z.string().default(""),
      /** Gone: manifests are signed at build (`npm run build:agent-package`); refused so the private key leaves the gateway. */
      signing_key_file: z
        .string()
        .default("")
        .refine((v) => v === "", {
          message:
            "no longer used: manifests are signed once by `npm run build:agent-package -- --signing-key` and the gateway holds only the public key; set releases.public_key_file (ORCH_RELEASES_PUBLIC_KEY_FILE) and remove the private key from the gateway (docs/agent-install.md#release-signing-key)",
        }),
    })
    .prefault({}),
});
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
