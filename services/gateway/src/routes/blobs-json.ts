import { z } from "zod";
import type { Blob } from "@orch/contracts";
import { iso } from "../schemas.js";

export const BlobOut = z.object({
  digest: z.string().describe("`sha256:` and 64 hex digits: what file sources name it by"),
  size: z.number().int().describe("bytes"),
  created_at: z.string().describe("RFC 3339"),
  created_by: z.string(),
  created_by_name: z.string(),
});

export const blobJson = (b: Blob): z.infer<typeof BlobOut> => ({
  digest: b.digest,
  size: Number(b.size),
  created_at: iso(b.createdAt),
  created_by: b.createdBy,
  created_by_name: b.createdByName,
});
