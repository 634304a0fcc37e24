import type { Queryable } from "@orch/kit";

export interface BlobRow {
  digest: string;
  content_id: string;
  size: number;
  created_at: number;
  created_by: string;
  created_by_name: string;
}

export interface UploadRow {
  id: string;
  digest: string;
  declared_size: number;
  received: number;
  next_seq: number;
  touched_at: number;
  actor_id: string;
  actor_name: string;
}

const BLOB_COLS = "digest, content_id, size::float8 AS size, created_at, created_by, created_by_name";
const UPLOAD_COLS =
  "id, digest, declared_size::float8 AS declared_size, received::float8 AS received, next_seq, touched_at, actor_id, actor_name";

export const blobsDb = {
  async get(db: Queryable, digest: string): Promise<BlobRow | undefined> {
    const r = await db.query<BlobRow>(`SELECT ${BLOB_COLS} FROM blobs WHERE digest = $1`, [digest]);
    return r.rows[0];
  },

  async page(db: Queryable, limit: number, after: string): Promise<BlobRow[]> {
    const r = await db.query<BlobRow>(`SELECT ${BLOB_COLS} FROM blobs WHERE digest > $1 ORDER BY digest LIMIT $2`, [
      after,
      limit,
    ]);
    return r.rows;
  },

  /** False when the digest was stored meanwhile (by another upload of the same content). */
  async insert(db: Queryable, row: BlobRow): Promise<boolean> {
    const r = await db.query(
      `INSERT INTO blobs (digest, content_id, size, created_at, created_by, created_by_name)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (digest) DO NOTHING`,
      [row.digest, row.content_id, row.size, row.created_at, row.created_by, row.created_by_name],
    );
    return r.rowCount === 1;
  },

  /** The blob, locked until the transaction ends: a module write naming it (FOR KEY SHARE) waits, or waits for it. */
  async lockForDelete(db: Queryable, digest: string): Promise<BlobRow | undefined> {
    const r = await db.query<BlobRow>(`SELECT ${BLOB_COLS} FROM blobs WHERE digest = $1 FOR UPDATE`, [digest]);
    return r.rows[0];
  },

  /** Those of `digests` stored before `before`, locked; one a module write holds right now is skipped. */
  async lockOlder(db: Queryable, digests: readonly string[], before: number): Promise<BlobRow[]> {
    const r = await db.query<BlobRow>(
      `SELECT ${BLOB_COLS} FROM blobs WHERE digest = ANY($1) AND created_at < $2
       ORDER BY digest FOR UPDATE SKIP LOCKED`,
      [digests, before],
    );
    return r.rows;
  },

  /** Deletes the (locked) blobs with their chunks and the git objects mapped to them. */
  async remove(db: Queryable, rows: readonly BlobRow[]): Promise<void> {
    if (rows.length === 0) return;
    const digests = rows.map((b) => b.digest);
    await db.query("DELETE FROM blobs WHERE digest = ANY($1)", [digests]);
    await db.query("DELETE FROM blob_chunks WHERE content_id = ANY($1)", [rows.map((b) => b.content_id)]);
    // A later sync of a source holding the same file streams it out of git and stores it again.
    await db.query("DELETE FROM source_blob_digests WHERE digest = ANY($1)", [digests]);
  },

  /** Chunks of `contentId` from chunk `fromSeq`, at most `limit`, in order. */
  async chunks(db: Queryable, contentId: string, fromSeq: number, limit: number): Promise<Buffer[]> {
    const r = await db.query<{ data: Buffer }>(
      "SELECT data FROM blob_chunks WHERE content_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
      [contentId, fromSeq, limit],
    );
    return r.rows.map((row) => row.data);
  },

  /** The chunk holding byte `offset` of a committed blob, with the offset it starts at. */
  async chunkAt(
    db: Queryable,
    contentId: string,
    offset: number,
  ): Promise<{ start: number; data: Buffer } | undefined> {
    // Text results, bytea as hex: node-postgres's binary result mode reads fields as UTF-8 strings,
    // which would corrupt any byte sequence that is not valid UTF-8.
    const r = await db.query<{ start: number; data: Buffer }>(
      `SELECT start::float8 AS start, data FROM blob_chunks
       WHERE content_id = $1 AND start <= $2 ORDER BY start DESC LIMIT 1`,
      [contentId, offset],
    );
    return r.rows[0];
  },
};

export const uploadsDb = {
  async insert(
    db: Queryable,
    row: Omit<UploadRow, "received" | "next_seq" | "touched_at">,
    now: number,
  ): Promise<void> {
    await db.query(
      `INSERT INTO blob_uploads (id, digest, declared_size, started_at, touched_at, actor_id, actor_name)
       VALUES ($1, $2, $3, $4, $4, $5, $6)`,
      [row.id, row.digest, row.declared_size, now, row.actor_id, row.actor_name],
    );
  },

  async get(db: Queryable, id: string): Promise<UploadRow | undefined> {
    const r = await db.query<UploadRow>(`SELECT ${UPLOAD_COLS} FROM blob_uploads WHERE id = $1`, [id]);
    return r.rows[0];
  },

  async lock(db: Queryable, id: string): Promise<UploadRow | undefined> {
    const r = await db.query<UploadRow>(`SELECT ${UPLOAD_COLS} FROM blob_uploads WHERE id = $1 FOR UPDATE`, [id]);
    return r.rows[0];
  },

  /** Appends chunk `seq` at byte `start` (the upload's `received`), under the upload's row lock. */
  async appendChunk(db: Queryable, up: UploadRow, data: Buffer, now: number): Promise<void> {
    const { id } = up;
    await db.query("INSERT INTO blob_chunks (content_id, seq, start, data) VALUES ($1, $2, $3, $4)", [
      id,
      up.next_seq,
      up.received,
      data,
    ]);
    await db.query(
      "UPDATE blob_uploads SET next_seq = next_seq + 1, received = received + $2, touched_at = $3 WHERE id = $1",
      [id, data.length, now],
    );
  },

  /** Whether chunk `seq` of the upload has exactly these bytes (a retried chunk). */
  async sameChunk(db: Queryable, id: string, seq: number, data: Buffer): Promise<boolean> {
    const r = await db.query("SELECT 1 FROM blob_chunks WHERE content_id = $1 AND seq = $2 AND data = $3", [
      id,
      seq,
      data,
    ]);
    return r.rowCount === 1;
  },

  /** The upload row goes; its chunks stay when they became a blob (`keepChunks`). */
  async remove(db: Queryable, id: string, keepChunks: boolean): Promise<void> {
    await db.query("DELETE FROM blob_uploads WHERE id = $1", [id]);
    if (!keepChunks) await db.query("DELETE FROM blob_chunks WHERE content_id = $1", [id]);
  },

  /** Drops uploads untouched since `before` (cut off, never committed or aborted); returns how many. */
  async sweep(db: Queryable, before: number): Promise<number> {
    const r = await db.query<{ id: string }>("DELETE FROM blob_uploads WHERE touched_at < $1 RETURNING id", [before]);
    const ids = r.rows.map((row) => row.id);
    if (ids.length) await db.query("DELETE FROM blob_chunks WHERE content_id = ANY($1)", [ids]);
    return ids.length;
  },
};
