import { WireType } from "@bufbuild/protobuf/wire";
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

/** Bytes of a varint. */
const varintSize = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

/**
 * Encodes an AuditFeed around the events' original bytes (StoredEvent.event = field 1,
 * StoredEvent.seq = field 2) instead of decoding and re-encoding every event on the ingest path.
 * Written into one buffer sized up front: the general-purpose writer's chunks and forks were a
 * visible share of the ingest's CPU.
 */
export function encodeFeed(events: Stored[]): Uint8Array {
  let size = 0;
  for (const e of events) {
    const inner = 1 + varintSize(e.bytes.length) + e.bytes.length + 9;
    size += 1 + varintSize(inner) + inner;
  }
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let pos = 0;
  const varint = (n: number) => {
    while (n >= 0x80) {
      out[pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    out[pos++] = n;
  };
  for (const e of events) {
    out[pos++] = (1 << 3) | WireType.LengthDelimited; // AuditFeed.events
    varint(1 + varintSize(e.bytes.length) + e.bytes.length + 9);
    out[pos++] = (1 << 3) | WireType.LengthDelimited; // StoredEvent.event
    varint(e.bytes.length);
    out.set(e.bytes, pos);
    pos += e.bytes.length;
    out[pos++] = (2 << 3) | WireType.Bit64; // StoredEvent.seq (double)
    view.setFloat64(pos, e.seq, true);
    pos += 8;
  }
  return out;
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
