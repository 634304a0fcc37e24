import t from "tap";
import fc from "fast-check";
import { create, fromBinary, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { type AuditEvent, AuditEventSchema } from "@orch/contracts";
import { type DecodedEvent, decodeAuditEvent } from "../src/decode.js";

// The hand-written AuditEvent decoder against the generated one: same fields, same metadata JSON.
const plain = (e: AuditEvent | DecodedEvent) => ({
  id: e.id,
  timestamp: e.timestamp,
  eventType: e.eventType,
  severity: e.severity,
  summary: e.summary,
  actor: e.actor ? { id: e.actor.id, name: e.actor.name, type: e.actor.type } : undefined,
  target: e.target ? { id: e.target.id, name: e.target.name, type: e.target.type } : undefined,
  metadata: e.metadata,
});
const viaGenerated = (bytes: Uint8Array) => plain(fromBinary(AuditEventSchema, bytes));

const ref = fc.option(fc.record({ id: fc.string(), name: fc.string({ unit: "grapheme" }), type: fc.string() }), {
  nil: undefined,
});
const json = fc.dictionary(fc.string({ unit: "grapheme" }), fc.jsonValue({ maxDepth: 4 })) as fc.Arbitrary<JsonObject>;
const eventArb = fc.record({
  id: fc.string(),
  timestamp: fc.string(),
  eventType: fc.string({ unit: "grapheme" }),
  severity: fc.string(),
  summary: fc.string({ unit: "grapheme" }),
  actor: ref,
  target: ref,
  metadata: fc.option(json, { nil: undefined }),
});

t.test("decodes what the generated code decodes, for any event", async (t) => {
  fc.assert(
    fc.property(eventArb, (e) => {
      const bytes = toBinary(AuditEventSchema, create(AuditEventSchema, e));
      t.strictSame(plain(decodeAuditEvent(bytes)), viaGenerated(bytes));
    }),
    { numRuns: 500 },
  );
});

t.test("metadata values of every kind, including an empty Value and lists of structs", async (t) => {
  const metadata = { a: null, b: 1.5, c: -0, d: "x", e: true, f: { g: [1, "h", null, { i: [] }] }, "": {} };
  const bytes = toBinary(AuditEventSchema, create(AuditEventSchema, { id: "1", metadata }));
  t.strictSame(decodeAuditEvent(bytes).metadata, viaGenerated(bytes).metadata);
  // An entry whose Value sets no kind, and an entry without a value: both null.
  const w = new BinaryWriter();
  w.tag(1, WireType.LengthDelimited).string("1");
  w.tag(8, WireType.LengthDelimited).fork();
  w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string("empty");
  w.tag(2, WireType.LengthDelimited).fork().join().join();
  w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string("missing").join();
  w.join();
  const raw = w.finish();
  t.strictSame(decodeAuditEvent(raw).metadata, { empty: null, missing: null });
  t.strictSame(decodeAuditEvent(raw).metadata, viaGenerated(raw).metadata);
});

t.test("a key named __proto__ is an ordinary key", async (t) => {
  const w = new BinaryWriter();
  w.tag(8, WireType.LengthDelimited).fork();
  w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string("__proto__");
  w.tag(2, WireType.LengthDelimited).fork().tag(5, WireType.LengthDelimited).fork().join().join().join();
  w.join();
  const m = decodeAuditEvent(w.finish()).metadata!;
  t.equal(Object.getPrototypeOf(m), Object.prototype, "the prototype is untouched");
  t.equal(JSON.stringify(m), '{"__proto__":{}}');
});

t.test("unknown fields are skipped and repeated message fields merge", async (t) => {
  const w = new BinaryWriter();
  w.tag(1, WireType.LengthDelimited).string("first");
  w.tag(99, WireType.Varint).uint32(7);
  w.tag(100, WireType.LengthDelimited).bytes(new Uint8Array([1, 2, 3]));
  w.tag(6, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string("a1").join();
  w.tag(6, WireType.LengthDelimited).fork().tag(2, WireType.LengthDelimited).string("n1").join();
  w.tag(1, WireType.LengthDelimited).string("last");
  const bytes = w.finish();
  const got = decodeAuditEvent(bytes);
  t.equal(got.id, "last", "the last scalar wins");
  t.strictSame(got.actor, { id: "a1", name: "n1", type: "" }, "two actor fields merge");
  t.strictSame(plain(got), viaGenerated(bytes));
});

t.test("malformed input throws, as with the generated code", async (t) => {
  const bytes = toBinary(
    AuditEventSchema,
    create(AuditEventSchema, { id: "01ABC", eventType: "x.y", actor: { id: "a" }, metadata: { k: [1, 2] } }),
  );
  for (let cut = 1; cut < bytes.length; cut++) {
    const part = bytes.subarray(0, cut);
    let generated = true;
    try {
      fromBinary(AuditEventSchema, part);
    } catch {
      generated = false;
    }
    if (!generated) t.throws(() => decodeAuditEvent(part), `cut at ${cut} of ${bytes.length}`);
  }
  t.throws(() => decodeAuditEvent(new Uint8Array([0x0a, 0x05, 0x41])), "a string longer than the input");
  t.throws(() => decodeAuditEvent(new Uint8Array([0x08, 0x01])), "a known field with the wrong wire type");
});
