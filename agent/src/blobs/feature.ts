import { AgentBlobService } from "@orch/contracts";
import type { AgentHandlers, Feature } from "../runtime.js";
import { BlobCache } from "./cache.js";
import { DEFAULT_BLOB_CACHE_MAX_BYTES } from "./evict.js";

/**
 * Serves AgentBlobService: the state service ships module file sources into this agent's blob
 * cache before an operation that reads them. The cache is capped (--blob-cache-max-bytes).
 */
export const blobsFeature: Feature = (rt) => {
  const cache = new BlobCache(rt.dataDir, {
    maxBytes: rt.options.blobCacheMaxBytes ?? DEFAULT_BLOB_CACHE_MAX_BYTES,
    log: rt.log,
  });
  rt.serve(AgentBlobService, blobHandlers(cache));
};

/** The proto's int64s are bigints; the cache's limits keep every size and offset an exact number. */
export function blobHandlers(cache: BlobCache): AgentHandlers<typeof AgentBlobService> {
  return {
    // One call names all of an apply's blobs: they stay pinned until its deadline (the operation's).
    blobsMissing: async (req, ctx) => ({
      missing: (await cache.missing(req.digests, { deadline: ctx.deadline })).map((m) => ({
        digest: m.digest,
        have: BigInt(m.have),
      })),
    }),
    writeBlobChunk: async (req) => {
      const r = await cache.write({
        digest: req.digest,
        size: Number(req.size),
        offset: Number(req.offset),
        data: req.data,
      });
      return { have: BigInt(r.have), complete: r.complete };
    },
  };
}
