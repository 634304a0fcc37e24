import { z } from "zod";
import { baseConfigSchema } from "@orch/kit";
import { parseKeyring } from "./keyring.js";

export const secretsConfigSchema = baseConfigSchema.extend({
  secrets: z
    .object({
      /**
       * Keyring `id:base64key[,id:base64key...]`, active key first (ORCH_SECRETS_KEYS). Checked
       * here so a missing or malformed key stops the process before it connects anywhere.
       */
      keys: z
        .string()
        .default("")
        .superRefine((spec, ctx) => {
          try {
            parseKeyring(spec);
          } catch (err) {
            ctx.addIssue({ code: "custom", message: (err as Error).message });
          }
        }),
      /** Re-encrypt every secret to the active key when the service starts (one replica does it). */
      reencrypt_on_start: z.boolean().default(false),
    })
    .prefault({}),
});
export type SecretsConfig = z.infer<typeof secretsConfigSchema>;
