import { invalid, type Queryable } from "@orch/kit";
import type { BlobRef, ParsedModule } from "../module/types.js";

/** The digests among `digests` that no stored blob has. */
export async function unknownDigests(db: Queryable, digests: readonly string[]): Promise<Set<string>> {
  const wanted = [...new Set(digests)];
  if (wanted.length === 0) return new Set();
  const r = await db.query<{ digest: string }>("SELECT digest FROM blobs WHERE digest = ANY($1)", [wanted]);
  const stored = new Set(r.rows.map((row) => row.digest));
  return new Set(wanted.filter((d) => !stored.has(d)));
}

export const unknownBlobMessage = (ref: BlobRef) =>
  `${ref.path} (line ${ref.line}): blob ${ref.digest} is not stored: upload it first (PUT /api/v1/blobs/${ref.digest})`;

/** The module's blob references that are not stored, in module order. */
export async function unknownBlobRefs(db: Queryable, parsed: Pick<ParsedModule, "blobs">): Promise<BlobRef[]> {
  const unknown = await unknownDigests(
    db,
    parsed.blobs.map((b) => b.digest),
  );
  return parsed.blobs.filter((b) => unknown.has(b.digest));
}

/** 400 unknown_blob at the first `source:` whose blob is not stored. */
export async function refuseUnknownBlobs(db: Queryable, parsed: Pick<ParsedModule, "blobs">): Promise<void> {
  const [first] = await unknownBlobRefs(db, parsed);
  if (first)
    throw invalid("unknown_blob", unknownBlobMessage(first), {
      field: "content",
      path: first.path,
      line: first.line,
      column: first.column,
    });
}
