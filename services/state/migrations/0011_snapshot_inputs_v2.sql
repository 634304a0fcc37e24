-- What a version-2 module rendered with besides attributes and tags, so a drift check renders it
-- again exactly: the top-level values keys its templates read, and its resolved parameters.
-- NULL for a version-1 module, which reads neither.
ALTER TABLE snapshots ADD COLUMN used_values jsonb, ADD COLUMN parameters jsonb;
