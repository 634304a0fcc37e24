import t, { type Test } from "tap";
import { isDeepStrictEqual } from "node:util";
import {
  create,
  createFileRegistry,
  fromBinary,
  toBinary,
  ScalarType,
  type DescField,
  type DescMessage,
} from "@bufbuild/protobuf";
import {
  FileDescriptorProtoSchema,
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as T,
} from "@bufbuild/protobuf/wkt";
import * as contracts from "@orch/contracts";
import { ListOperatorsResponseSchema, OperatorSchema } from "@orch/contracts";
import { createMessageCodec } from "../src/codec/index.js";
import { createPlans } from "../src/codec/plan.js";

// The bus codec must be indistinguishable from protobuf-es: same bytes out, same objects in,
// same errors for values protobuf-es rejects.

let seed = 42;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const pick = <X>(xs: X[]): X => xs[Math.floor(rnd() * xs.length)]!;
const STRINGS = [
  "",
  "a",
  "op-1",
  "01KAK0000000000000000000ZZ",
  "ünïcødé ✓",
  "x".repeat(42),
  "y".repeat(43),
  "z".repeat(200),
  "\ud800 lone",
  "é".repeat(70),
  "w".repeat(20_000),
];

function scalarValue(s: ScalarType): unknown {
  switch (s) {
    case ScalarType.STRING:
      return pick(STRINGS);
    case ScalarType.BOOL:
      return rnd() < 0.5;
    case ScalarType.DOUBLE:
      return pick([0, -0, 1.5, -2.25e300, Number.NaN, Number.POSITIVE_INFINITY, 1763770000000]);
    case ScalarType.FLOAT:
      return pick([0, 0.5, -3.25, 1e30]);
    case ScalarType.BYTES:
      return pick([new Uint8Array(0), new Uint8Array([1, 2, 3]), new Uint8Array(300).fill(7)]);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return pick([0, 1, -1, 127, 128, 300, -300, 2147483647, -2147483648]);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return pick([0, 1, 127, 128, 16384, 4294967295]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return pick([0n, 1n, 1n << 40n]);
    default:
      return pick([0n, 1n, -5n, 1n << 40n]);
  }
}

function fieldValue(f: DescField, depth: number): unknown {
  const one = (): unknown => {
    if (
      f.fieldKind === "enum" ||
      (f.fieldKind === "list" && f.listKind === "enum") ||
      (f.fieldKind === "map" && f.mapKind === "enum")
    ) {
      return pick([...f.enum!.values.map((v) => v.number), -1]);
    }
    const m =
      f.fieldKind === "message" ||
      (f.fieldKind === "list" && f.listKind === "message") ||
      (f.fieldKind === "map" && f.mapKind === "message")
        ? f.message
        : undefined;
    if (m) return m.typeName === "google.protobuf.Struct" ? { a: 1, b: ["x", true, null] } : randomInit(m, depth + 1);
    return scalarValue(f.scalar ?? ScalarType.INT32);
  };
  if (f.fieldKind === "list") return Array.from({ length: Math.floor(rnd() * 4) }, one);
  if (f.fieldKind === "map")
    return Object.fromEntries(
      Array.from({ length: Math.floor(rnd() * 3) }, () => [pick(["", "k", "2", "ключ", "z".repeat(50)]), one()]),
    );
  return one();
}

function randomInit(desc: DescMessage, depth = 0): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  if (depth > 3) return init;
  for (const m of desc.members) {
    if (rnd() < 0.3) continue;
    if (m.kind === "oneof") {
      const f = pick(m.fields);
      init[m.localName] = { case: f.localName, value: fieldValue(f, depth) };
    } else {
      init[m.localName] = fieldValue(m, depth);
    }
  }
  return init;
}

function sameAsProtobufEs(
  t: Test,
  codec: ReturnType<typeof createMessageCodec>,
  desc: DescMessage,
  init: unknown,
  label: string,
) {
  const expected = toBinary(desc, create(desc, init as never));
  const actual = codec.encode(desc, init);
  if (!Buffer.from(actual).equals(Buffer.from(expected))) {
    t.fail(`${label}: encoding differs`, { init });
    return false;
  }
  const decoded = codec.decode(desc, expected);
  if (!isDeepStrictEqual(decoded, fromBinary(desc, expected))) {
    t.fail(`${label}: decoding differs`, { decoded });
    return false;
  }
  return true;
}

const schemas = Object.entries(contracts).filter(
  ([k, v]) => k.endsWith("Schema") && (v as { kind?: string }).kind === "message",
) as Array<[string, DescMessage]>;

t.test("every message in the contracts encodes and decodes exactly like protobuf-es", async (t) => {
  t.ok(schemas.length > 50, `found ${schemas.length} message types`);
  const plans = createPlans();
  t.ok(schemas.filter(([, d]) => plans.get(d)).length > schemas.length / 2, "most take the fast path");
  const codec = createMessageCodec();
  let ok = 0;
  for (const [name, desc] of schemas) {
    if (!sameAsProtobufEs(t, codec, desc, {}, `${name} (empty)`)) continue;
    let all = true;
    for (let i = 0; i < 30 && all; i++) all = sameAsProtobufEs(t, codec, desc, randomInit(desc), `${name} #${i}`);
    if (all) ok++;
  }
  t.equal(ok, schemas.length);
});

// Field kinds the contracts do not use yet (sint32, fixed32, float, packed enums, message maps…).
const file = create(FileDescriptorProtoSchema, {
  name: "codec_test.proto",
  package: "codec.test",
  syntax: "proto3",
  enumType: [
    {
      name: "Color",
      value: [
        { name: "COLOR_UNSPECIFIED", number: 0 },
        { name: "COLOR_RED", number: 1 },
        { name: "COLOR_BLUE", number: 5 },
      ],
    },
  ],
  messageType: [
    {
      name: "All",
      field: [
        ...(
          [
            ["s", T.STRING],
            ["b", T.BOOL],
            ["d", T.DOUBLE],
            ["f", T.FLOAT],
            ["i32", T.INT32],
            ["u32", T.UINT32],
            ["s32", T.SINT32],
            ["fx32", T.FIXED32],
            ["sfx32", T.SFIXED32],
            ["by", T.BYTES],
          ] as const
        ).flatMap(([n, type], i) => [
          { name: n, number: i + 1, type, label: Label.OPTIONAL, jsonName: n },
          { name: `rep_${n}`, number: i + 20, type, label: Label.REPEATED, jsonName: `rep${n}` },
        ]),
        { name: "color", number: 40, type: T.ENUM, typeName: ".codec.test.Color", label: Label.OPTIONAL },
        { name: "colors", number: 41, type: T.ENUM, typeName: ".codec.test.Color", label: Label.REPEATED },
        { name: "child", number: 42, type: T.MESSAGE, typeName: ".codec.test.All", label: Label.OPTIONAL },
        { name: "children", number: 43, type: T.MESSAGE, typeName: ".codec.test.All", label: Label.REPEATED },
        {
          name: "by_name",
          number: 44,
          type: T.MESSAGE,
          typeName: ".codec.test.All.ByNameEntry",
          label: Label.REPEATED,
        },
        { name: "labels", number: 45, type: T.MESSAGE, typeName: ".codec.test.All.LabelsEntry", label: Label.REPEATED },
        { name: "maybe", number: 46, type: T.INT32, label: Label.OPTIONAL, proto3Optional: true, oneofIndex: 0 },
        { name: "text", number: 47, type: T.STRING, label: Label.OPTIONAL, oneofIndex: 1 },
        { name: "num", number: 48, type: T.SINT32, label: Label.OPTIONAL, oneofIndex: 1 },
        { name: "sub", number: 49, type: T.MESSAGE, typeName: ".codec.test.All", label: Label.OPTIONAL, oneofIndex: 1 },
        { name: "unpacked", number: 50, type: T.INT32, label: Label.REPEATED, options: { packed: false } },
        { name: "far", number: 300_000, type: T.STRING, label: Label.OPTIONAL }, // a four-byte tag
      ],
      nestedType: [
        {
          name: "ByNameEntry",
          options: { mapEntry: true },
          field: [
            { name: "key", number: 1, type: T.STRING, label: Label.OPTIONAL },
            { name: "value", number: 2, type: T.MESSAGE, typeName: ".codec.test.All", label: Label.OPTIONAL },
          ],
        },
        {
          name: "LabelsEntry",
          options: { mapEntry: true },
          field: [
            { name: "key", number: 1, type: T.STRING, label: Label.OPTIONAL },
            { name: "value", number: 2, type: T.ENUM, typeName: ".codec.test.Color", label: Label.OPTIONAL },
          ],
        },
      ],
      oneofDecl: [{ name: "_maybe" }, { name: "choice" }],
    },
  ],
});
const All = createFileRegistry(file, () => undefined).getMessage("codec.test.All")!;

t.test("every field kind encodes and decodes exactly like protobuf-es", async (t) => {
  t.ok(createPlans().get(All), "the type takes the fast path (a comparison with itself would prove nothing)");
  const codec = createMessageCodec();
  let ok = 0;
  for (let i = 0; i < 300; i++) if (sameAsProtobufEs(t, codec, All, randomInit(All), `All #${i}`)) ok++;
  t.equal(ok, 300);
  t.ok(
    sameAsProtobufEs(t, codec, All, { maybe: 0, choice: { case: "num", value: 0 } }, "explicit zero values"),
    "explicit presence keeps zero values",
  );
  const deep = {
    children: Array.from({ length: 200 }, () => ({ s: "x".repeat(100), child: { by: new Uint8Array(20_000) } })),
  };
  t.ok(sameAsProtobufEs(t, codec, All, deep, "large nested"), "nested lengths of two and three bytes");
});

t.test("a page of operators round-trips", async (t) => {
  const codec = createMessageCodec();
  const operators = Array.from({ length: 50 }, (_, i) =>
    create(OperatorSchema, {
      id: `01KAK${String(i).padStart(21, "0")}`,
      name: `op-${i}`,
      publicKey: "ab".repeat(32),
      role: "operator",
      active: true,
      createdAt: 1763770000000 + i,
      createdBy: "system",
    }),
  );
  const bytes = codec.encode(ListOperatorsResponseSchema, { operators, nextCursor: "" });
  t.same(codec.decode(ListOperatorsResponseSchema, bytes), create(ListOperatorsResponseSchema, { operators }));
});

t.test("values protobuf-es converts or rejects behave as with protobuf-es", async (t) => {
  const codec = createMessageCodec();
  // protobuf-es accepts numeric strings for int32 and arrays for bytes.
  t.ok(sameAsProtobufEs(t, codec, All, { i32: "7", by: [1, 2, 3] }, "converted values"));
  for (const bad of [
    { i32: 1.5 },
    { u32: -1 },
    { f: 1e39 },
    { s32: 2 ** 31 },
    { children: [null] },
    { colors: ["x"] },
  ]) {
    const expected = (() => {
      try {
        return toBinary(All, create(All, bad as never));
      } catch (err) {
        return (err as Error).message;
      }
    })();
    const actual = (() => {
      try {
        return codec.encode(All, bad);
      } catch (err) {
        return (err as Error).message;
      }
    })();
    t.same(
      typeof actual === "string" ? actual : Buffer.from(actual),
      typeof expected === "string" ? expected : Buffer.from(expected),
      JSON.stringify(bad),
    );
  }
});

t.test("unknown fields and malformed input are left to protobuf-es", async (t) => {
  const codec = createMessageCodec();
  // Field 99 is unknown to All: protobuf-es keeps it in $unknown and writes it back.
  const withUnknown = Buffer.concat([
    Buffer.from(toBinary(All, create(All, { s: "x" }))),
    Buffer.from([0x98, 0x06, 0x05]),
  ]);
  const decoded = codec.decode(All, withUnknown) as { $unknown?: unknown[] };
  t.same(decoded, fromBinary(All, withUnknown));
  t.equal(decoded.$unknown?.length, 1);
  t.ok(Buffer.from(codec.encode(All, decoded)).equals(withUnknown), "unknown fields are written back");
  const truncated = withUnknown.subarray(0, 2);
  const message = (f: () => unknown) => {
    try {
      f();
      return "no error";
    } catch (err) {
      return (err as Error).message;
    }
  };
  t.equal(
    message(() => codec.decode(All, truncated)),
    message(() => fromBinary(All, truncated)),
  );
  t.not(
    message(() => fromBinary(All, truncated)),
    "no error",
  );
});
