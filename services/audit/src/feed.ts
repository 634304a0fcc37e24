import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { AUDIT_FEED_SUBJECT } from "@orch/contracts";
import type { Logger, NatsConnection } from "@orch/kit";

export { AUDIT_FEED_SUBJECT };

/** A newly stored event: its AuditEvent encoding as received, and its storage position. */
export interface Stored {
  bytes: Uint8Array;
  seq: number;
}

// Keeps each message far below NATS's default 1 MiB max_payload.
const PER_MESSAGE = 100;

/**
 * Encodes an AuditFeed around the events' original bytes (StoredEvent.event = field 1,
 * StoredEvent.seq = field 2) instead of decoding and re-encoding every event on the ingest path.
 */
export function encodeFeed(events: Stored[]): Uint8Array {
  const w = new BinaryWriter();
  for (const e of events)
    w.tag(1, WireType.LengthDelimited)
      .fork()
      .tag(1, WireType.LengthDelimited)
      .bytes(e.bytes)
      .tag(2, WireType.Bit64)
      .double(e.seq)
      .join();
  return w.finish();
}

/** Announces newly stored events. Best effort: live tails re-read the store to cover losses. */
export function createFeedPublisher(nc: NatsConnection, log: Logger): (events: Stored[]) => void {
  return (events) => {
    for (let i = 0; i < events.length; i += PER_MESSAGE) {
      try {
        nc.publish(AUDIT_FEED_SUBJECT, encodeFeed(events.slice(i, i + PER_MESSAGE)));
      } catch (err) {
        log.debug({ err: (err as Error).message }, "audit feed publish failed");
      }
    }
  };
}
