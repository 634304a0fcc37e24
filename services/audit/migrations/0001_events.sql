-- One row per audit event, keyed on its ULID so redelivered events are stored once.
-- `seq` follows commit order (inserts are serialised by an advisory lock), which lets a live tail
-- resume without gaps even when events arrive out of id order.
CREATE TABLE events (
  id text COLLATE "C" PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  ts bigint NOT NULL,
  event_type text COLLATE "C" NOT NULL,
  -- First one and two segments of the type: the category filter at depth 1 and 2.
  cat1 text COLLATE "C" GENERATED ALWAYS AS (split_part(event_type, '.', 1)) STORED,
  cat2 text COLLATE "C" GENERATED ALWAYS AS (
    split_part(event_type, '.', 1) || CASE WHEN split_part(event_type, '.', 2) <> '' THEN '.' || split_part(event_type, '.', 2) ELSE '' END
  ) STORED,
  severity text NOT NULL,
  summary text NOT NULL,
  actor_id text COLLATE "C" NOT NULL,
  actor_name text COLLATE "C" NOT NULL,
  actor_type text COLLATE "C" NOT NULL,
  target_id text COLLATE "C" NOT NULL,
  target_name text COLLATE "C" NOT NULL,
  target_type text COLLATE "C" NOT NULL,
  metadata jsonb NOT NULL
);

-- Every filter is an equality on a leading column followed by the id, so a page is one ordered
-- index range scan (keyset on id, time bounds turned into id bounds) whatever the table size.
CREATE UNIQUE INDEX events_seq ON events (seq);
CREATE INDEX events_type_id ON events (event_type, id);
CREATE INDEX events_cat1_id ON events (cat1, id);
CREATE INDEX events_cat2_id ON events (cat2, id);
CREATE INDEX events_actor_id_id ON events (actor_type, actor_id, id);
CREATE INDEX events_actor_name_id ON events (actor_type, actor_name, id);
CREATE INDEX events_target_id_id ON events (target_type, target_id, id);
CREATE INDEX events_target_name_id ON events (target_type, target_name, id);

-- The retention override set through the API (at most one row; no row = use the config file).
CREATE TABLE retention (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  retention_days integer NOT NULL CHECK (retention_days >= 1),
  updated_at bigint NOT NULL,
  updated_by text NOT NULL
);
