import { toRow } from "./convert.js";
import type { EventRow } from "./db/events.js";
import { decodeAuditEvent, type DecodedEvent } from "./decode.js";
import { parseUlid } from "./ulid-time.js";

/**
 * What ingest decides, as a pure transition function: `step(state, event)` returns the next state
 * and the effects the driver (ingest.ts) performs, in order. Nothing here does I/O; deliveries and
 * commits come in as events. The driver owns the messages and the buffer of held events (keyed by
 * stream sequence, so a redelivery of a message still waiting replaces it).
 *
 *   stopped → running → draining (stop asked: store what is held, then end) → stopped
 */
export type IngestState = { phase: "stopped" | "running" | "draining" };

/** A held delivery, by stream sequence. */
export interface Held {
  seq: number;
  id: string;
}

export type IngestEvent =
  | { type: "start" }
  | { type: "stop" }
  /** A message the consumer delivered. */
  | { type: "delivered"; seq: number; subject: string; data: Uint8Array }
  /** A batch is committed: `inserted` newly stored (with their store sequence), `refused` by Postgres. */
  | {
      type: "committed";
      batch: readonly Held[];
      inserted: ReadonlyArray<{ id: string; seq: number }>;
      refused: ReadonlySet<string>;
    }
  /** The buffer ran empty while draining. */
  | { type: "drained" };

export type Counter = "stored" | "duplicates" | "rejected";

export type IngestEffect =
  | { type: "start_consumer" }
  | { type: "stop_consumer" }
  /** Buffer the event (replacing a held delivery of the same sequence) and wake the store loop. */
  | { type: "hold"; seq: number; id: string; row: EventRow }
  | { type: "ack"; seq: number }
  /** Terminate: redelivery would never help. */
  | { type: "term"; seq: number; reason: string }
  | { type: "count"; counter: Counter; n: number }
  /** Hand newly stored events to the feed: the delivery (stream sequence) each came in, its store sequence. */
  | { type: "announce"; stored: ReadonlyArray<{ delivery: number; seq: number }> }
  | { type: "log"; level: "error" | "warn"; fields: Record<string, unknown>; msg: string };

export const initialIngest: IngestState = { phase: "stopped" };

type Result = { state: IngestState; effects: IngestEffect[] };

/** The event a delivery carries, or undefined when it is not a valid AuditEvent. */
function valid(data: Uint8Array): { ev: DecodedEvent; id: string } | undefined {
  let ev: DecodedEvent;
  try {
    ev = decodeAuditEvent(data);
  } catch {
    return undefined;
  }
  const id = parseUlid(ev.id);
  return id && id === ev.id && ev.eventType ? { ev, id } : undefined;
}

function delivered(e: Extract<IngestEvent, { type: "delivered" }>): IngestEffect[] {
  const ok = valid(e.data);
  if (!ok)
    return [
      {
        type: "log",
        level: "error",
        fields: { subject: e.subject, stream_seq: e.seq },
        msg: "audit message is not a valid AuditEvent; terminated",
      },
      { type: "count", counter: "rejected", n: 1 },
      { type: "term", seq: e.seq, reason: "invalid AuditEvent" },
    ];
  const { row, skewed } = toRow(ok.ev);
  const effects: IngestEffect[] = [];
  if (skewed)
    effects.push({
      type: "log",
      level: "warn",
      fields: { id: ok.id, event_type: ok.ev.eventType },
      msg: "event timestamp lies far from its id time; time filters may miss it",
    });
  effects.push({ type: "hold", seq: e.seq, id: ok.id, row });
  return effects;
}

/** Acknowledge what is stored (new or a redelivery), terminate what Postgres refused; count; announce. */
function committed(e: Extract<IngestEvent, { type: "committed" }>): IngestEffect[] {
  const effects: IngestEffect[] = e.batch.map(({ seq, id }) =>
    e.refused.has(id) ? { type: "term", seq, reason: "refused by Postgres" } : { type: "ack", seq },
  );
  effects.push(
    { type: "count", counter: "rejected", n: e.refused.size },
    { type: "count", counter: "stored", n: e.inserted.length },
    { type: "count", counter: "duplicates", n: e.batch.length - e.inserted.length - e.refused.size },
  );
  if (e.inserted.length) {
    // A batch holding two deliveries of one event stored it once, from the later delivery.
    const delivery = new Map(e.batch.map(({ seq, id }) => [id, seq]));
    effects.push({ type: "announce", stored: e.inserted.map(({ id, seq }) => ({ delivery: delivery.get(id)!, seq })) });
  }
  return effects;
}

export function step(state: IngestState, event: IngestEvent): Result {
  switch (event.type) {
    case "start":
      if (state.phase !== "stopped") return { state, effects: [] };
      return { state: { phase: "running" }, effects: [{ type: "start_consumer" }] };
    // Stopping pulls no more; what is held is still stored and acknowledged (draining).
    case "stop":
      if (state.phase === "draining") return { state, effects: [] };
      return {
        state: { phase: state.phase === "running" ? "draining" : "stopped" },
        effects: [{ type: "stop_consumer" }],
      };
    case "delivered":
      return { state, effects: delivered(event) };
    case "committed":
      return { state, effects: committed(event) };
    case "drained":
      return { state: state.phase === "draining" ? { phase: "stopped" } : state, effects: [] };
  }
}
