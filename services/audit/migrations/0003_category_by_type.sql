-- The category filter no longer needs columns and indexes of its own: a category page walks the
-- distinct event types under the prefix through events_type_id and reads each type's newest rows
-- there (services/audit/src/db/query.ts). Two generated columns and two index entries less per
-- row: the one backend that does every insert spends that much less on each event.
DROP INDEX events_cat1_id;
DROP INDEX events_cat2_id;
ALTER TABLE events DROP COLUMN cat1, DROP COLUMN cat2;
