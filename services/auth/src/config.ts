import { z } from "zod";
import { LOGIN_CODE_TTL_SECONDS } from "@orch/contracts/console";
import { baseConfigSchema, parseKeyring } from "@orch/kit";

export const authConfigSchema = baseConfigSchema.extend({
  auth: z
    .object({
      token_ttl_hours: z.number().positive().default(12),
      challenge_ttl_seconds: z.number().int().positive().default(60),
      /** Lifetime of a one-time console login code (`orchctl console`). */
      login_code_ttl_seconds: z.number().int().positive().default(LOGIN_CODE_TTL_SECONDS),
      /** Lifetime of a web console session (the cookie's token). */
      console_session_ttl_hours: z.number().positive().default(12),
      /** Lifetime of a WebAuthn challenge (passkey registration or sign-in). */
      webauthn_challenge_ttl_seconds: z.number().int().positive().default(60),
      /** A burst of failed logins for one operator notifies once per window (the first failure). */
      login_failure_window_seconds: z.number().int().positive().default(900),
      /** Hex Ed25519 public key of the first admin, created at start when no admin exists (ORCH_BOOTSTRAP_ADMIN_KEY). */
      bootstrap_admin_key: z.string().default(""),
      bootstrap_admin_name: z.string().default("admin"),
      /**
       * Keyring sealing identity providers' client secrets and users' refresh tokens (AES-256-GCM),
       * `id:base64key[,id:base64key...]`, active key first (ORCH_AUTH_SSO_KEYS). Empty: single
       * sign-on is off (PutIdentityProvider answers sso_unavailable).
       */
      sso_keys: z.string().default(""),
      /** Seconds between refreshes of a signed-in SSO operator against its provider (a provider may set its own). */
      sso_refresh_interval_seconds: z.number().int().positive().default(300),
      /** Lifetime of a pending SSO sign-in (the browser's round trip through the provider). */
      sso_login_ttl_seconds: z.number().int().positive().default(600),
      /** How long sessions survive a provider that does not answer refreshes; then they end (docs/sso.md). */
      sso_unreachable_grace_seconds: z.number().int().min(0).default(900),
      /** Roles whose operators must sign in through SSO: key, login-code and passkey sign-in are refused. */
      require_sso_for_roles: z.array(z.enum(["admin", "operator"])).default([]),
      /** Operators (by name) without an SSO identity that may still sign in with a key: the break-glass admin. */
      break_glass_operators: z.array(z.string()).default(["admin"]),
      /** Seconds between runs of the job that expires pending change requests past their expiry (docs/approvals.md). */
      approvals_expiry_interval_seconds: z.number().int().positive().default(30),
      /** Milliseconds between runs of the job that ends just-in-time access grants at their expiry. */
      access_expiry_interval_ms: z.number().int().min(100).max(60_000).default(500),
    })
    .prefault({})
    .superRefine((a, ctx) => {
      // A malformed keyring stops the service at start, naming the setting.
      if (a.sso_keys.trim() === "") return;
      try {
        parseKeyring(a.sso_keys, "ORCH_AUTH_SSO_KEYS");
      } catch (err) {
        ctx.addIssue({ code: "custom", path: ["sso_keys"], message: (err as Error).message });
      }
    }),
});
export type AuthConfig = z.infer<typeof authConfigSchema>;
