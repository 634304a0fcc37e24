import { BLOB_DIGEST } from "@orch/contracts";
import type { Queryable } from "@orch/kit";

/** The digest grammar (contracts) without its anchors: a digest anywhere in a module's text. */
const DIGEST_IN_TEXT = BLOB_DIGEST.source.replace(/^\^|\$$/g, "");
/** How long a held module upload keeps its blobs: a policy's longest expiry (docs/approvals.md). */
const PENDING_KEPT_MS = 2_592_000_000;

/**
 * What "a module names a blob" means, written once for DeleteBlob and the collector: every
 * (digest, module, current) where a module (`current`) or a kept module version (what snapshots
 * re-render and drift checks compare against, pruned by engine/sweep.ts) has the digest literally
 * in its YAML (anywhere: a `source:`, or a comment — naming it keeps it) or in its bundle manifest,
 * and a module upload held for approval (approvals/catalog-write.ts) the same way.
 * Each row's content is read once, however many digests are asked about.
 */
const NAMED_BLOBS = `
  SELECT named.digest, n.name, n.current FROM (
    SELECT name, true AS current, content, files FROM modules
    UNION ALL
    SELECT name, false AS current, content, files FROM module_versions
    UNION ALL
    -- A module upload waiting for approval keeps its blobs until it runs or its request could no
    -- longer be approved (the longest expiry a policy may set: 30 days).
    SELECT name, false AS current, body ->> 'content', body -> 'files' FROM pending_catalog_writes
    WHERE kind = 'module' AND op <> 'delete' AND executed_at IS NULL
      AND created_at > (extract(epoch FROM now()) * 1000)::bigint - ${PENDING_KEPT_MS}
  ) n
  CROSS JOIN LATERAL (
    SELECT m[1] AS digest FROM regexp_matches(n.content, '${DIGEST_IN_TEXT}', 'g') AS m
    UNION
    SELECT f ->> 'digest' FROM jsonb_array_elements(
      CASE WHEN jsonb_typeof(n.files) = 'array' THEN n.files ELSE '[]'::jsonb END) AS f
  ) named`;

/** A module naming a blob: by its current content, or only by a version still kept. */
export interface BlobUser {
  module: string;
  current: boolean;
}

/** The modules naming each of `digests` (those named by none are absent), sorted by name. */
export async function blobUsers(db: Queryable, digests: readonly string[]): Promise<Map<string, BlobUser[]>> {
  const out = new Map<string, BlobUser[]>();
  if (digests.length === 0) return out;
  const r = await db.query<{ digest: string; name: string; current: boolean }>(
    `SELECT digest, name, bool_or(current) AS current FROM (${NAMED_BLOBS}) u
     WHERE digest = ANY($1) GROUP BY digest, name ORDER BY digest, name`,
    [[...new Set(digests)]],
  );
  for (const row of r.rows) {
    const users = out.get(row.digest) ?? [];
    users.push({ module: row.name, current: row.current });
    out.set(row.digest, users);
  }
  return out;
}

/**
 * Blobs stored before `before` that nothing names, by digest after `after`, at most `limit`:
 * the collector's candidates (it locks them and asks blobUsers again before deleting).
 */
export async function unreferencedBlobs(
  db: Queryable,
  before: number,
  after: string,
  limit: number,
): Promise<string[]> {
  const r = await db.query<{ digest: string }>(
    `SELECT b.digest FROM blobs b
     WHERE b.created_at < $1 AND b.digest > $2
       AND NOT EXISTS (SELECT 1 FROM (${NAMED_BLOBS}) u WHERE u.digest = b.digest)
     ORDER BY b.digest LIMIT $3`,
    [before, after, limit],
  );
  return r.rows.map((row) => row.digest);
}
