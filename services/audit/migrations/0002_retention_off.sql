-- An override may now be "off": PUT /audit/retention {"retention_days": null} disables pruning
-- whatever the configuration file says (a NULL row), while DELETE /audit/retention removes the row
-- and the configuration file's audit.retention_days applies again.
ALTER TABLE retention ALTER COLUMN retention_days DROP NOT NULL;
