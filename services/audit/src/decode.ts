import type { JsonObject } from "@bufbuild/protobuf";
import { type AuditEvent, AuditEventSchema, type Ref } from "@orch/contracts";
import { createMessageCodec } from "@orch/kit/codec";

/** A decoded Ref (AuditEvent.actor / target). */
export interface RefFields {
  id: string;
  name: string;
  type: string;
}

/** The AuditEvent fields the store needs, metadata already in its JSON form. */
export interface DecodedEvent {
  id: string;
  timestamp: string;
  eventType: string;
  severity: string;
  summary: string;
  actor?: RefFields;
  target?: RefFields;
  metadata?: JsonObject;
}

// The kit's codec, the bus's one fast path (fromBinary for anything it does not take exactly).
// A "__proto__" metadata key is data here, as the store keeps the JSON an emitter sent.
const codec = createMessageCodec({ protoKeysAsData: true });

const fields = (r: Ref): RefFields => ({ id: r.id, name: r.name, type: r.type });

/**
 * Decodes an AuditEvent into plain fields, the Struct metadata into the JSON object fromBinary
 * gives (an unset Value is null). Ingest decodes every event it stores. Proto3 rules apply:
 * unknown fields are skipped, a repeated scalar keeps its last value, repeated message fields
 * merge. Throws on malformed input, like fromBinary.
 */
export function decodeAuditEvent(bytes: Uint8Array): DecodedEvent {
  const e = codec.decode(AuditEventSchema, bytes) as AuditEvent;
  const ev: DecodedEvent = {
    id: e.id,
    timestamp: e.timestamp,
    eventType: e.eventType,
    severity: e.severity,
    summary: e.summary,
  };
  if (e.actor) ev.actor = fields(e.actor);
  if (e.target) ev.target = fields(e.target);
  if (e.metadata) ev.metadata = e.metadata;
  return ev;
}
