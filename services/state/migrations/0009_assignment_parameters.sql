-- An assignment's parameters (module schema version 2): the values it gives its modules' declared
-- parameters, checked against those declarations when it is created or changed. Existing
-- assignments give none.
ALTER TABLE assignments ADD COLUMN parameters jsonb NOT NULL DEFAULT '{}'::jsonb;
