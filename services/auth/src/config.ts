import { z } from "zod";
import { LOGIN_CODE_TTL_SECONDS } from "@orch/contracts/console";
import { baseConfigSchema } from "@orch/kit";

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
    })
    .prefault({}),
});
export type AuthConfig = z.infer<typeof authConfigSchema>;
