import { invalid, type Queryable } from "@orch/kit";
import type { BlobRef, ParsedModule } from "../module/types.js";

/**
 * `lock`: the blobs found stay locked against deletion (FOR KEY SHARE; DeleteBlob and the
 * collector lock FOR UPDATE) until the caller's transaction ends, so a module written in it never
 * names a blob deleted meanwhile: either this finds the blob gone, or the delete finds the module.
 */
export interface BlobCheck {
  lock?: boolean;
}

/** The digests among `digests` that no stored blob has. */
export async function unknownDigests(
  db: Queryable,
  digests: readonly string[],
  { lock = false }: BlobCheck = {},
): Promise<Set<string>> {
  const wanted = [...new Set(digests)];
  if (wanted.length === 0) return new Set();
  const r = await db.query<{ digest: string }>(
    `SELECT digest FROM blobs WHERE digest = ANY($1)${lock ? " ORDER BY digest FOR KEY SHARE" : ""}`,
    [wanted],
  );
  const stored = new Set(r.rows.map((row) => row.digest));
  return new Set(wanted.filter((d) => !stored.has(d)));
}

export const unknownBlobMessage = (ref: BlobRef) =>
  `${ref.path} (line ${ref.line}): blob ${ref.digest} is not stored: upload it first (PUT /api/v1/blobs/${ref.digest})`;

/** The module's blob references that are not stored, in module order. */
export async function unknownBlobRefs(
  db: Queryable,
  parsed: Pick<ParsedModule, "blobs">,
  check: BlobCheck = {},
): Promise<BlobRef[]> {
  const unknown = await unknownDigests(
    db,
    parsed.blobs.map((b) => b.digest),
    check,
  );
  return parsed.blobs.filter((b) => unknown.has(b.digest));
}

/** 400 unknown_blob at the first `source:` whose blob is not stored. */
export async function refuseUnknownBlobs(
  db: Queryable,
  parsed: Pick<ParsedModule, "blobs">,
  check: BlobCheck = {},
): Promise<void> {
  const [first] = await unknownBlobRefs(db, parsed, check);
  if (first)
    throw invalid("unknown_blob", unknownBlobMessage(first), {
      field: "content",
      path: first.path,
      line: first.line,
      column: first.column,
    });
}
