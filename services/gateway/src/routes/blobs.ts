import { Readable } from "node:stream";
import { z } from "zod";
import { StateService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { declaredSize, streamOf, uploadBlob } from "./blob-upload.js";
import { DigestParam } from "./blobs-schemas.js";
import { BlobOut, blobJson } from "./blobs-json.js";

export function blobRoutes(ctx: GatewayContext) {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "PUT",
      path: "/api/v1/blobs/{digest}",
      auth: "operator",
      summary: "Upload a content-addressed blob (a module file source), streamed",
      description: [
        "The body is the file's bytes (any content type; `application/octet-stream` is usual), streamed through to storage in 256 KiB chunks and never held whole.",
        "The blob is kept only if its bytes hash to the digest in the path and end at the Content-Length (when sent); a cut-off or mismatching upload stores nothing.",
        "Uploading a blob that is already stored answers 200 and stores nothing (the body is read and dropped; `GET /api/v1/blobs/{digest}` first saves sending it); a new one answers 201.",
        "Blobs may be up to `state.blob_max_bytes` (1 GiB by default); a larger Content-Length is refused before any byte is read.",
      ].join(" "),
      tags: ["blobs"],
      params: DigestParam,
      streamBody: true,
      responses: { 200: BlobOut, 201: BlobOut },
      errors: {
        400: ["invalid_digest", "blob_digest_mismatch", "blob_size_mismatch", "invalid_chunk"],
        413: ["blob_too_large"],
      },
      async handler({ params, body, call, raw }, reply) {
        // Whatever happens before the body is read to its end, the connection closes after the
        // answer rather than reading (and discarding) the rest of a large body.
        reply.header("connection", "close");
        const r = await uploadBlob(
          state,
          {
            digest: params.digest,
            declaredSize: declaredSize(raw.raw),
            body: streamOf(body),
            timeoutMs: ctx.timeoutMs,
          },
          call,
        );
        reply.removeHeader("connection"); // the body was read to its end
        return reply.code(r.created ? 201 : 200).send(blobJson(r.blob));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/blobs",
      auth: "operator",
      summary: "List stored blobs by digest",
      tags: ["blobs"],
      query: pageQuery,
      responses: {
        200: z.object({ blobs: z.array(BlobOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      async handler({ query, call }) {
        const r = await state.listBlobs({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return { blobs: r.blobs.map(blobJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/blobs/{digest}",
      auth: "operator",
      summary: "A stored blob's size and who uploaded it",
      tags: ["blobs"],
      params: DigestParam,
      responses: { 200: BlobOut },
      errors: { 400: ["invalid_digest"], 404: ["blob_not_found"] },
      async handler({ params, call }) {
        return blobJson(await state.getBlob({ digest: params.digest }, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/blobs/{digest}",
      auth: "admin",
      summary: "Delete a blob no module names",
      description: [
        "Removes the blob and its bytes.",
        "Refused with 409 `blob_in_use` while a module, or a module version still kept for snapshots and drift checks, names it: in its YAML (`source: sha256:…`) or in its bundle's files (the problem lists up to five modules).",
        "Blobs nothing names are also deleted by the state service on their own once older than `state.blob_gc_grace_seconds` (7 days by default).",
      ].join(" "),
      tags: ["blobs"],
      params: DigestParam,
      responses: { 204: null },
      errors: { 400: ["invalid_digest"], 404: ["blob_not_found"], 409: ["blob_in_use"] },
      async handler({ params, call }) {
        await state.deleteBlob({ digest: params.digest }, call);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/blobs/{digest}/content",
      auth: "operator",
      summary: "Download a stored blob's bytes (streamed)",
      tags: ["blobs"],
      params: DigestParam,
      responses: { 200: z.string().describe("the bytes, application/octet-stream") },
      errors: { 400: ["invalid_digest"], 404: ["blob_not_found"] },
      async handler({ params, call }, reply) {
        const { digest } = params;
        const blob = await state.getBlob({ digest }, call);
        async function* chunks() {
          for (let offset = 0n; ; ) {
            const c = await state.readBlobChunk({ digest, offset, maxBytes: 0 }, call);
            if (c.data.length) yield Buffer.from(c.data);
            offset += BigInt(c.data.length);
            if (c.eof || c.data.length === 0) return;
          }
        }
        reply
          .code(200)
          .header("content-type", "application/octet-stream")
          .header("content-length", String(blob.size))
          .header("x-content-sha256", digest.slice("sha256:".length));
        return reply.send(Readable.from(chunks()));
      },
    }),
  ];
}
