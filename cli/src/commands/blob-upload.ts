/** Streams a file to PUT /api/v1/blobs/<digest> (the generated client buffers bodies; this does not). */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import type { BlobInfo } from "@orch/client";
import type { Context } from "../context.js";
import { CliError, ProblemError, type Problem } from "../errors.js";

/** The file's digest (`sha256:<hex>`) and size, read once as a stream. */
export async function digestOfFile(file: string): Promise<{ digest: string; size: number }> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (err) {
    throw new CliError(
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      "file_unreadable",
    );
  }
  const hash = createHash("sha256");
  for await (const piece of createReadStream(file)) hash.update(piece as Buffer);
  return { digest: `sha256:${hash.digest("hex")}`, size };
}

/** PUT of the file's bytes as they are read; the blob as the API answers it. */
export async function putBlobFile(
  ctx: Context,
  file: string,
  digest: string,
  size: number,
): Promise<{ blob: BlobInfo; created: boolean }> {
  const r = await putStream<BlobInfo>(ctx, `/api/v1/blobs/${digest}`, createReadStream(file), size);
  return { blob: r.body, created: r.status === 201 };
}

/**
 * A streamed PUT to a stream-body route (blobs, module bundles): the generated client buffers
 * bodies, this sends them as they are read. `size` is sent as Content-Length when known.
 */
export async function putStream<T>(
  ctx: Context,
  path: string,
  stream: Readable,
  size: number | undefined,
): Promise<{ body: T; status: number }> {
  const server = await ctx.orch.server();
  const token = await ctx.orch.token(server);
  const body = Readable.toWeb(stream) as ReadableStream<Uint8Array>;
  const res = await fetch(new URL(path, server), {
    method: "PUT",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/octet-stream",
      ...(size === undefined ? {} : { "content-length": String(size) }),
    },
    body,
    duplex: "half",
  } as RequestInit);
  const json = (await res.json().catch(() => undefined)) as (T & Problem) | undefined;
  if (res.status === 200 || res.status === 201) return { body: json as T, status: res.status };
  if (json?.code) throw new ProblemError(json);
  throw new CliError(`upload failed: HTTP ${res.status}`, "upload_failed");
}
