-- Blobs (docs/modules.md, "Files of any size"): content-addressed files that module file sources
-- name by digest. Their bytes are chunks in Postgres, so every replica reads them with no other
-- component (an S3-compatible store can take the same interface later). An upload writes its
-- chunks under its own id, and the commit that verified them makes that id the blob's content:
-- nothing is copied, and an upload cut off leaves only rows the sweeper drops.
CREATE TABLE blob_uploads (
  id text PRIMARY KEY,
  digest text NOT NULL,
  -- -1: not declared (a chunked request); otherwise the upload must end at exactly this size.
  declared_size bigint NOT NULL,
  received bigint NOT NULL DEFAULT 0,
  next_seq integer NOT NULL DEFAULT 0,
  started_at bigint NOT NULL,
  touched_at bigint NOT NULL,
  actor_id text NOT NULL,
  actor_name text NOT NULL
);
CREATE INDEX blob_uploads_touched ON blob_uploads (touched_at);

CREATE TABLE blob_chunks (
  -- An upload's id, and once committed the blob's content_id.
  content_id text NOT NULL,
  seq integer NOT NULL,
  -- Byte offset of the chunk in the blob: a read from any offset finds its chunk by index.
  start bigint NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (content_id, seq),
  UNIQUE (content_id, start)
);
-- Blobs are mostly compressed already (tarballs, binaries): storing them out of line without a
-- compression attempt saves the CPU that would find nothing to gain.
ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE blobs (
  digest text PRIMARY KEY,
  content_id text NOT NULL UNIQUE,
  size bigint NOT NULL,
  created_at bigint NOT NULL,
  created_by text NOT NULL,
  created_by_name text NOT NULL
);
