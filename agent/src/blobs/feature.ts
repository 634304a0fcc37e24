import { AgentBlobService } from "@orch/contracts";
import type { AgentHandlers, Feature } from "../runtime.js";
import { BlobCache } from "./cache.js";

/**
 * Serves AgentBlobService: the state service ships module file sources into this agent's blob
 * cache before an operation that reads them.
 */
export const blobsFeature: Feature = (rt) => {
  rt.serve(AgentBlobService, blobHandlers(new BlobCache(rt.dataDir)));
};

/** The proto's int64s are bigints; the cache's limits keep every size and offset an exact number. */
export function blobHandlers(cache: BlobCache): AgentHandlers<typeof AgentBlobService> {
  return {
    blobsMissing: async (req) => ({
      missing: (await cache.missing(req.digests)).map((m) => ({ digest: m.digest, have: BigInt(m.have) })),
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
