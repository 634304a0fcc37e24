/** Blobs as table rows, fields and the upload confirmation (pure). */
import type { BlobInfo, BlobPage } from "@orch/client";

export const BLOB_COLUMNS = ["DIGEST", "SIZE", "UPLOADED", "BY"];

const by = (b: Pick<BlobInfo, "created_by" | "created_by_name">) => b.created_by_name || b.created_by;

export function blobRows(blobs: BlobPage["blobs"]): unknown[][] {
  return blobs.map((b) => [b.digest, b.size, b.created_at, by(b)]);
}

export function blobFields(b: BlobInfo): [string, unknown][] {
  return [
    ["digest", b.digest],
    ["size", b.size],
    ["uploaded_at", b.created_at],
    ["uploaded_by", by(b)],
  ];
}

/** What `blobs put` says, and how a module names the blob. */
export const blobPutLines = (b: Pick<BlobInfo, "digest" | "size">, created: boolean) => [
  `${created ? "Uploaded" : "Already stored:"} blob ${b.digest} (${b.size} bytes)`,
  `use it in a module: source: ${b.digest}`,
];
