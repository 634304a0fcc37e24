-- A git source's bundle files (docs/sources.md, "Bundles"): the blob digest each git object's bytes
-- hash to. A git object id names exactly one content, so a sync hashes and stores each file once,
-- not on every sync of every commit that still holds it.
CREATE TABLE source_blob_digests (
  oid text PRIMARY KEY,
  digest text NOT NULL,
  size bigint NOT NULL
);
-- Deleting a blob (DELETE /api/v1/blobs, the collector) drops its mappings.
CREATE INDEX source_blob_digests_digest ON source_blob_digests (digest);
