// Pieces of the audit bench's ingest phases that need none of its state.
import { readFileSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { createInbox, headers, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { AuditEventSchema } from "@orch/contracts";

type Ref = { id: string; name: string; type: string };

/** CPU seconds (user + system) of a process, 0 once it is gone. */
export const cpuOf = (pid: number) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
};

/** Polls GET /audit for the newest event of a type every 50 ms; posts [id, first seen] pairs when told to stop. */
export const POLLER = `
  const { parentPort, workerData } = require("node:worker_threads");
  const seen = [];
  let polling = true;
  parentPort.once("message", () => { polling = false; });
  (async () => {
    while (polling) {
      try {
        const res = await fetch(workerData.url, { headers: { authorization: "Bearer " + workerData.token } });
        const id = res.ok ? (await res.json()).events[0]?.id : undefined;
        if (id && id !== seen.at(-1)?.[0]) seen.push([id, Date.now()]);
      } catch {}
      await new Promise((r) => setTimeout(r, 50));
    }
    parentPort.postMessage(seen);
  })();
`;

/** Bytes of a varint. */
const varintSize = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);
/** Bytes of a length-delimited field (tag below 16) holding `n` bytes. */
const fieldSize = (n: number) => 1 + varintSize(n) + n;
const utf8 = (s: string) => Buffer.byteLength(s, "utf8");
// metadata = Struct { fields: { "n": Value { number_value } } }: entry key (3) + value (2 + 9).
const METADATA_ENTRY = 14;
const METADATA_STRUCT = fieldSize(METADATA_ENTRY);

/**
 * An AuditEvent's bytes written field by field into one buffer sized up front (what create +
 * toBinary produce, at a fraction of the publisher's CPU): id 1, timestamp 2, event_type 3,
 * severity 4, summary 5, actor 6, target 7, metadata 8 = Struct { "n": number_value }.
 */
export const encodeEvent = (
  eventType: string,
  e: { id: string; timestamp: string; actor: Ref; target: Ref; n: number },
): Uint8Array => {
  const top = [e.id, e.timestamp, eventType, "info", "ingest"];
  const topLen = top.map(utf8);
  const refs = [e.actor, e.target];
  const refLen = refs.map((r) => [utf8(r.id), utf8(r.name), utf8(r.type)] as const);
  const refSize = refLen.map(([a, b, c]) => fieldSize(a) + fieldSize(b) + fieldSize(c));
  let size = fieldSize(METADATA_STRUCT);
  for (const n of topLen) size += fieldSize(n);
  for (const n of refSize) size += fieldSize(n);
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  const varint = (n: number) => {
    while (n >= 0x80) {
      out[pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    out[pos++] = n;
  };
  const string = (no: number, s: string, n: number) => {
    out[pos++] = (no << 3) | WireType.LengthDelimited;
    varint(n);
    pos += out.write(s, pos, n, "utf8");
  };
  for (let i = 0; i < top.length; i++) string(i + 1, top[i]!, topLen[i]!);
  refs.forEach((r, i) => {
    const [a, b, c] = refLen[i]!;
    out[pos++] = ((6 + i) << 3) | WireType.LengthDelimited;
    varint(refSize[i]!);
    string(1, r.id, a);
    string(2, r.name, b);
    string(3, r.type, c);
  });
  out[pos++] = (8 << 3) | WireType.LengthDelimited; // AuditEvent.metadata (Struct)
  varint(METADATA_STRUCT);
  out[pos++] = (1 << 3) | WireType.LengthDelimited; // Struct.fields entry
  varint(METADATA_ENTRY);
  string(1, "n", 1);
  out[pos++] = (2 << 3) | WireType.LengthDelimited; // entry value (Value)
  varint(9);
  out[pos++] = (2 << 3) | WireType.Bit64; // Value.number_value
  out.writeDoubleLE(e.n, pos);
  pos += 8;
  if (pos !== size) throw new Error(`AuditEvent encoding wrote ${pos} of ${size} bytes`);
  return out;
};

/** Why a PubAck is not one: the stream did not store the message. */
function pubAckError(m: Msg): Error | undefined {
  if (m.data.length === 0) return new Error(`no PubAck (status ${m.headers?.code ?? "none"})`);
  try {
    const ack = m.json<{ stream?: string; error?: { description?: string } }>();
    if (ack.error) return new Error(ack.error.description ?? "JetStream error");
    return ack.stream ? undefined : new Error("invalid PubAck");
  } catch {
    return new Error("undecodable PubAck");
  }
}

export interface AckedPublisher {
  /** Publishes with a Nats-Msg-Id; `done` gets the outcome once the stream acknowledged (or not). */
  publish(subject: string, data: Uint8Array, msgId: string, done: (err?: Error) => void): void;
  close(): void;
}

/**
 * JetStream publishes with acknowledgements, pipelined as the Go client's PublishAsync does: each
 * message carries its own reply subject under one inbox subscription, and each PubAck is checked
 * (a stream named, no error) when it arrives. The same messages on the wire as js.publish
 * (Nats-Msg-Id header, reply subject, PubAck), without its per-call timer, promise race, option
 * copies and TextDecoder, which made the bench's own CPU per event rival the services' it
 * measures on the same two cores. One sweep a second fails publishes left unacknowledged.
 */
export function ackedPublisher(nc: NatsConnection, timeoutMs: number): AckedPublisher {
  const inbox = `${createInbox()}.`;
  // Insertion order is publish order: the sweep stops at the first one still in time.
  const waiting = new Map<number, { at: number; done: (err?: Error) => void }>();
  let next = 0;
  const sub = nc.subscribe(`${inbox}*`, {
    callback: (err, m) => {
      if (err) return;
      const token = Number(m.subject.slice(inbox.length));
      const w = waiting.get(token);
      if (!w) return;
      waiting.delete(token);
      w.done(pubAckError(m));
    },
  });
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [token, w] of waiting) {
      if (now - w.at < timeoutMs) break;
      waiting.delete(token);
      w.done(new Error("no PubAck in time"));
    }
  }, 1000);
  return {
    publish(subject, data, msgId, done) {
      const token = next++;
      const h = headers();
      h.set("Nats-Msg-Id", msgId);
      waiting.set(token, { at: Date.now(), done });
      try {
        nc.publish(subject, data, { reply: `${inbox}${token}`, headers: h });
      } catch (err) {
        waiting.delete(token);
        done(err as Error);
      }
    },
    close() {
      clearInterval(sweep);
      sub.unsubscribe();
      for (const w of waiting.values()) w.done(new Error("publisher closed"));
      waiting.clear();
    },
  };
}

// Checked once at load: a mistake here would make every published event invalid.
{
  // A name outside ASCII: string lengths are UTF-8 bytes, not UTF-16 units.
  const actor = { id: "node-1", name: "wéb-1 ✓", type: "agent" };
  const check = fromBinary(
    AuditEventSchema,
    encodeEvent("bench.check", {
      id: "I",
      timestamp: "T",
      actor,
      target: { id: "s", name: "s", type: "system" },
      n: 7.5,
    }),
  );
  if (
    check.id !== "I" ||
    check.timestamp !== "T" ||
    check.eventType !== "bench.check" ||
    check.summary !== "ingest" ||
    check.severity !== "info" ||
    check.actor?.name !== "wéb-1 ✓" ||
    check.actor?.type !== "agent" ||
    check.target?.id !== "s" ||
    check.target?.type !== "system" ||
    check.metadata?.n !== 7.5
  )
    throw new Error("the bench's AuditEvent encoding does not decode to what it wrote");
}
