import t from "tap";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { AuditEventSchema } from "@orch/contracts";
import { createMessageCodec } from "../src/codec/index.js";

// A Struct key "__proto__": left to protobuf-es by default, an own key with protoKeysAsData.
function withProtoKey(): Uint8Array {
  const w = new BinaryWriter();
  w.tag(1, WireType.LengthDelimited).string("01KB0000000000000000000001");
  w.tag(8, WireType.LengthDelimited).fork();
  w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string("__proto__");
  w.tag(2, WireType.LengthDelimited).fork().tag(5, WireType.LengthDelimited).fork().join().join().join();
  w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string("n");
  w.tag(2, WireType.LengthDelimited).fork().tag(2, WireType.Bit64).double(1.5).join().join();
  w.join();
  return w.finish();
}

t.test("by default a __proto__ key decodes as protobuf-es decodes it", async (t) => {
  const bytes = withProtoKey();
  const got = createMessageCodec().decode(AuditEventSchema, bytes) as { metadata?: object };
  const want = fromBinary(AuditEventSchema, bytes);
  t.equal(JSON.stringify(got.metadata), JSON.stringify(want.metadata));
  t.equal(Object.getPrototypeOf(got.metadata), Object.getPrototypeOf(want.metadata));
});

t.test("with protoKeysAsData a __proto__ key is an own key and the prototype is untouched", async (t) => {
  const got = createMessageCodec({ protoKeysAsData: true }).decode(AuditEventSchema, withProtoKey()) as {
    metadata?: Record<string, unknown>;
  };
  const m = got.metadata!;
  t.equal(Object.getPrototypeOf(m), Object.prototype);
  t.equal(JSON.stringify(m), '{"__proto__":{},"n":1.5}');
  t.ok(Object.hasOwn(m, "__proto__"));
});

t.test("other input decodes the same with or without the option", async (t) => {
  const bytes = toBinary(
    AuditEventSchema,
    create(AuditEventSchema, {
      id: "x",
      actor: { id: "a", name: "n", type: "agent" },
      metadata: { k: [1, "v", null] },
    }),
  );
  t.strictSame(
    createMessageCodec({ protoKeysAsData: true }).decode(AuditEventSchema, bytes),
    fromBinary(AuditEventSchema, bytes),
  );
});
