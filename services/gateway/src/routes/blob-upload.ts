import { Readable } from "node:stream";
import type { Blob, StateService } from "@orch/contracts";
import { chunked, invalid, type CallOptions, type Client } from "@orch/kit";

/** What a streamed upload came to: the blob, and whether this request stored it. */
export interface UploadResult {
  blob: Blob;
  created: boolean;
}

/** Commit verifies the whole blob by reading it back: its budget grows with the size. */
const commitTimeoutMs = (base: number, bytes: number) => base + Math.ceil(bytes / (16 * 1024 * 1024)) * 1000;

/**
 * Sends `body` to the state service in chunks of the size it asks for, one at a time (so the request
 * is read only as fast as the chunks are stored, and at most one chunk is held), then commits.
 * A body cut off or refused part-way aborts the upload: nothing is stored half-way.
 */
export async function uploadBlob(
  state: Client<typeof StateService>,
  req: { digest: string; declaredSize: number; body: Readable; timeoutMs: number },
  call: CallOptions,
): Promise<UploadResult> {
  const begun = await state.beginBlobUpload({ digest: req.digest, size: BigInt(req.declaredSize) }, call);
  if (begun.existing) {
    await discardBody(req.body, Number(begun.existing.size));
    return { blob: begun.existing, created: false };
  }
  const uploadId = begun.uploadId;
  try {
    let seq = 0;
    let bytes = 0;
    for await (const chunk of chunked(req.body, begun.maxChunkBytes)) {
      await state.putBlobChunk({ uploadId, seq: seq++, data: chunk }, call);
      bytes += chunk.length;
    }
    const blob = await state.commitBlobUpload(
      { uploadId },
      { ...call, timeoutMs: commitTimeoutMs(req.timeoutMs, bytes) },
    );
    return { blob, created: true };
  } catch (err) {
    // A commit that refused the upload has dropped it already; aborting again is harmless.
    await state.abortBlobUpload({ uploadId }, call).catch(() => undefined);
    throw err;
  }
}

/**
 * Reads and drops the body of an upload whose blob is stored already. Answering before the body
 * is read would close the connection under a client still sending, which most report as a failed
 * upload; a body longer than the blob is a different upload and is refused.
 */
async function discardBody(body: Readable, size: number): Promise<void> {
  let bytes = 0;
  for await (const piece of body) {
    bytes += (piece as Buffer).length;
    if (bytes > size)
      throw invalid("blob_size_mismatch", `the body is longer than the stored blob's ${size} bytes`, { size });
  }
}

/** The request's Content-Length, or -1 for a chunked body. */
export function declaredSize(raw: { headers: Record<string, string | string[] | undefined> }): number {
  const h = raw.headers["content-length"];
  const n = typeof h === "string" ? Number(h) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : -1;
}

/** A stream-body route's body (route.ts streamBody): the request stream itself. */
export function streamOf(body: unknown): Readable {
  if (body instanceof Readable) return body;
  throw new Error("a streamBody route got no request stream");
}
