import type { BundleFile } from "@orch/contracts";
import type { Queryable } from "@orch/kit";
import { storeBlobStream } from "../blobs/store-stream.js";
import type { StateDeps } from "../deps.js";
import { sourceActor } from "./actor.js";
import type { GitRepo, TreeFile } from "./git.js";

/** The digest and size of each bundle file's git object, by object id. */
export type BundleDigests = ReadonlyMap<string, Pick<BundleFile, "digest" | "size">>;

/**
 * Every bundle file of the tree (modules/<name>/files/…) as a stored blob: a git object seen
 * before is looked up, a new one is streamed out of git into blob storage once, one at a time (a
 * file may be as large as a blob may be). The tree then resolves `source: files/…` like an upload.
 */
export async function bundleDigests(
  deps: Pick<StateDeps, "pool" | "clock" | "ids" | "events" | "config">,
  repo: Pick<GitRepo, "readBlob">,
  source: string,
  files: readonly TreeFile[],
): Promise<BundleDigests> {
  const oids = [...new Set(files.flatMap((f) => (f.blob && !f.blob.link ? [f.blob.oid] : [])))];
  const out = new Map((await known(deps.pool, oids)).map((r) => [r.oid, { digest: r.digest, size: r.size }] as const));
  const max = deps.config.state.blob_max_bytes;
  for (const f of files) {
    if (!f.blob || f.blob.link || out.has(f.blob.oid) || f.bytes > max) continue;
    const stored = await storeBlobStream(deps, repo.readBlob(f.blob.oid), sourceActor(source));
    await deps.pool.query(
      "INSERT INTO source_blob_digests (oid, digest, size) VALUES ($1, $2, $3) ON CONFLICT (oid) DO NOTHING",
      [f.blob.oid, stored.digest, stored.size],
    );
    out.set(f.blob.oid, { digest: stored.digest, size: stored.size });
  }
  return out;
}

/** Mappings whose blob is still stored. */
async function known(db: Queryable, oids: string[]): Promise<{ oid: string; digest: string; size: number }[]> {
  if (oids.length === 0) return [];
  const r = await db.query<{ oid: string; digest: string; size: number }>(
    `SELECT d.oid, d.digest, d.size::float8 AS size FROM source_blob_digests d
     JOIN blobs b ON b.digest = d.digest WHERE d.oid = ANY($1)`,
    [oids],
  );
  return r.rows;
}
