import { z } from "zod";

/** The state service checks the digest's grammar (invalid_digest); here only its length is bounded. */
export const DigestParam = z.object({
  digest: z.string().min(1).max(80).describe("`sha256:` and 64 lowercase hex digits"),
});
