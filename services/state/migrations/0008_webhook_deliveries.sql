-- Forge webhook deliveries already accepted, so the same signed notification sent again (a replay,
-- a forge's redelivery) does not sync a second time: across replicas and restarts, hence here and
-- not in memory. A delivery is recorded under two keys: the forge's delivery id ('id:<id>') and the
-- SHA-256 of its body ('body:<hex>'). The id header is not covered by the signature, so a replay
-- with a made-up id is still caught by its body. Rows older than
-- state.sources_webhook_replay_window_hours are pruned; deleting the source deletes its rows (a
-- source created again under the name has a new secret, so old deliveries no longer verify).
CREATE TABLE webhook_deliveries (
  source text NOT NULL REFERENCES sources (name) ON DELETE CASCADE,
  key text NOT NULL,
  received_at bigint NOT NULL,
  PRIMARY KEY (source, key)
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
