import { create, toBinary } from "@bufbuild/protobuf";
import { AuditFeedSchema, type StoredEvent } from "@orch/contracts";
import type { Logger, NatsConnection } from "@orch/kit";

/**
 * Core-NATS subject of the live feed (see AuditFeed in proto/orch/v1/audit.proto). It lies outside
 * `audit.>` so the stream does not capture it, and outside `orch.audit.*` (one token), which the
 * gateway may publish to for RPCs: only the audit service can publish here.
 */
export const AUDIT_FEED_SUBJECT = "orch.audit.feed.events";

// Keeps each message far below NATS's default 1 MiB max_payload.
const PER_MESSAGE = 100;

/** Announces newly stored events. Best effort: live tails re-read the store to cover losses. */
export function createFeedPublisher(nc: NatsConnection, log: Logger): (events: StoredEvent[]) => void {
  return (events) => {
    for (let i = 0; i < events.length; i += PER_MESSAGE) {
      try {
        nc.publish(AUDIT_FEED_SUBJECT, toBinary(AuditFeedSchema, create(AuditFeedSchema, { events: events.slice(i, i + PER_MESSAGE) })));
      } catch (err) {
        log.debug({ err: (err as Error).message }, "audit feed publish failed");
      }
    }
  };
}
