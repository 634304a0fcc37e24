import t, { type Test } from "tap";
import { isDeepStrictEqual } from "node:util";
import { create, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import * as contracts from "@orch/contracts";
import { ExecuteRequestSchema, ExecuteResponseSchema, ResourceResultSchema } from "@orch/contracts";
import { createMessageCodec } from "../src/codec/index.js";
import { BAIL } from "../src/codec/bail.js";
import { createEncoder } from "../src/codec/encoder.js";
import { createDecoder } from "../src/codec/decoder.js";
import { createPlans } from "../src/codec/plan.js";

// google.protobuf.Struct fields (JSON objects in protobuf-es) must come out of the fast path with
// protobuf-es' bytes and objects, and whatever the fast path does not reproduce must reach
// protobuf-es unchanged.

let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const pick = <X>(xs: X[]): X => xs[Math.floor(rnd() * xs.length)]!;

const KEYS = [
  "",
  "a",
  "path",
  "mode",
  "10",
  "2",
  "-1",
  "01",
  "4294967295",
  "ключ",
  "é".repeat(70),
  "k".repeat(130),
  "\ud800 lone",
  "constructor",
  "toString",
  "$typeName",
];
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  420,
  2 ** 53,
  1e308,
  -1e-308,
  5e-324,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
];
const STRINGS = [
  "",
  "x",
  "/etc/motd",
  "ünïcødé ✓",
  "\ud800 lone",
  "y".repeat(127),
  "z".repeat(128),
  "w".repeat(20_000),
];

function jsonValue(depth: number): unknown {
  const r = rnd();
  if (depth < 5 && r < 0.15) return Array.from({ length: Math.floor(rnd() * 5) }, () => jsonValue(depth + 1));
  if (depth < 5 && r < 0.3) return jsonObject(depth + 1);
  if (r < 0.5) return pick(NUMBERS);
  if (r < 0.75) return pick(STRINGS);
  if (r < 0.88) return rnd() < 0.5;
  return null;
}

function jsonObject(depth: number): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  const n = Math.floor(rnd() * 6);
  for (let i = 0; i < n; i++) o[pick(KEYS)] = jsonValue(depth);
  return o;
}

/** Encodes and decodes with the fast path alone: BAIL means protobuf-es would have done it. */
function fastPath(desc: DescMessage, init: unknown): "fast" | "bail" {
  const plan = createPlans().get(desc);
  if (!plan) return "bail";
  try {
    const bytes = createEncoder().encode(plan, init);
    createDecoder().decode(plan, bytes);
    return "fast";
  } catch (err) {
    if (err === BAIL) return "bail";
    throw err;
  }
}

const outcome = (f: () => unknown): unknown => {
  try {
    const v = f();
    return v instanceof Uint8Array ? Buffer.from(v) : v;
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
};

function sameAsProtobufEs(t: Test, desc: DescMessage, init: unknown, label: string): boolean {
  const codec = createMessageCodec();
  const expected = toBinary(desc, create(desc, init as never));
  if (!Buffer.from(codec.encode(desc, init)).equals(Buffer.from(expected))) {
    t.fail(`${label}: encoding differs`, { init });
    return false;
  }
  if (!isDeepStrictEqual(codec.decode(desc, expected), fromBinary(desc, expected))) {
    t.fail(`${label}: decoding differs`, { init });
    return false;
  }
  return true;
}

const resource = (i: number) => ({
  id: `res-${i}`,
  module: "web",
  type: pick(["file", "package", "service", "exec"]),
  spec: jsonObject(0),
  requires: i > 0 ? [`web/res-${i - 1}`] : [],
});
const result = (i: number) => ({
  id: `res-${i}`,
  module: "web",
  type: "file",
  status: pick(["ok", "changed", "failed"]),
  changed: rnd() < 0.5,
  diff: "--- a\n+++ b\n",
  durationMs: 1.25 * i,
  observed: jsonObject(0),
});

t.test("messages with Struct fields take the fast path", async (t) => {
  const plans = createPlans();
  const withStruct = Object.entries(contracts).filter(
    ([k, v]) =>
      k.endsWith("Schema") &&
      (v as { kind?: string }).kind === "message" &&
      (v as DescMessage).fields.some((f) => f.message?.typeName === "google.protobuf.Struct"),
  ) as Array<[string, DescMessage]>;
  t.ok(withStruct.length >= 5, `${withStruct.length} contract types carry a Struct`);
  for (const [name, desc] of withStruct) t.ok(plans.get(desc), `${name} has a plan`);
  t.equal(fastPath(ExecuteRequestSchema, { resources: [resource(0)] }), "fast");
  t.equal(fastPath(ExecuteResponseSchema, { results: [result(0)] }), "fast");
});

t.test("random JSON in Execute requests and responses matches protobuf-es", async (t) => {
  let ok = 0;
  let fast = 0;
  for (let i = 0; i < 200; i++) {
    const request = {
      operationId: `op-${i}`,
      mode: "apply",
      resources: Array.from({ length: 20 }, (_, j) => resource(j)),
      mask: ["s3cr3t"],
    };
    const response = { results: Array.from({ length: 20 }, (_, j) => result(j)) };
    if (
      sameAsProtobufEs(t, ExecuteRequestSchema, request, `request #${i}`) &&
      sameAsProtobufEs(t, ExecuteResponseSchema, response, `response #${i}`)
    )
      ok++;
    if (fastPath(ExecuteRequestSchema, request) === "fast" && fastPath(ExecuteResponseSchema, response) === "fast")
      fast++;
  }
  t.equal(ok, 200);
  t.equal(fast, 200, "none of them needed protobuf-es");
});

t.test("edge values: same bytes and objects as protobuf-es", async (t) => {
  const deep: Record<string, unknown> = {};
  let at = deep;
  for (let i = 0; i < 60; i++) at = at.next = { i, list: [[i]] } as Record<string, unknown>;
  const cases: Record<string, unknown> = {
    empty: {},
    "numeric keys first": { b: 1, "3": 2, a: 3, "1": 4 },
    "empty nested": { o: {}, l: [], ll: [[]], lo: [{}] },
    "special numbers": { nan: Number.NaN, inf: Number.POSITIVE_INFINITY, negZero: -0, tiny: 5e-324 },
    "long body": { text: "é".repeat(10_000), list: Array.from({ length: 300 }, (_, i) => ({ i })) },
    "deep nesting": deep,
    "not a plain object": { when: new Date(0), map: new Map([["a", 1]]) },
    "a message as JSON": { m: create(ResourceResultSchema, { id: "x" }) },
  };
  for (const [label, observed] of Object.entries(cases)) {
    t.ok(sameAsProtobufEs(t, ResourceResultSchema, { observed }, label), label);
    t.equal(fastPath(ResourceResultSchema, { observed }), "fast", `${label}: fast path`);
  }
});

t.test("values the fast path leaves to protobuf-es", async (t) => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  let deep: unknown = 1;
  for (let i = 0; i < 150; i++) deep = [deep];
  const cases: Record<string, unknown> = {
    undefined: { a: undefined },
    "undefined in a list": { a: [1, undefined] },
    "sparse list": { a: new Array(3).fill(1, 0, 1) },
    bigint: { a: 1n },
    function: { a: () => 1 },
    symbol: { a: Symbol("s") },
    "__proto__ key": JSON.parse('{"a": 1, "__proto__": {"b": 2}}'),
    "an array as the Struct": [1, 2],
    "a string as the Struct": "x",
    "very deep": { deep },
    cyclic,
  };
  const codec = createMessageCodec();
  for (const [label, observed] of Object.entries(cases)) {
    const init = { id: "r", observed };
    t.equal(fastPath(ResourceResultSchema, init), "bail", `${label}: bails`);
    t.same(
      outcome(() => codec.encode(ResourceResultSchema, init)),
      outcome(() => toBinary(ResourceResultSchema, create(ResourceResultSchema, init as never))),
      `${label}: same result as protobuf-es`,
    );
  }
});

// Hand-written wire data: ResourceResult.observed is field 11.
const entry = (w: BinaryWriter, key: string | undefined, value: ((w: BinaryWriter) => void) | undefined) => {
  w.tag(1, 2).fork();
  if (key !== undefined) w.tag(1, 2).string(key);
  if (value) {
    w.tag(2, 2).fork();
    value(w);
    w.join();
  }
  w.join();
};
const observedBytes = (body: (w: BinaryWriter) => void, times = 1): Uint8Array => {
  const w = new BinaryWriter();
  w.tag(1, 2).string("r");
  for (let i = 0; i < times; i++) {
    w.tag(11, 2).fork();
    body(w);
    w.join();
  }
  return w.finish();
};
const str = (s: string) => (w: BinaryWriter) => void w.tag(3, 2).string(s);
const num = (n: number) => (w: BinaryWriter) => void w.tag(2, 1).double(n);

t.test("wire data: decoded like protobuf-es, unusual shapes through protobuf-es", async (t) => {
  const plan = createPlans().get(ResourceResultSchema)!;
  const fastDecode = (data: Uint8Array) => {
    try {
      createDecoder().decode(plan, data);
      return "fast";
    } catch (err) {
      if (err === BAIL) return "bail";
      throw err;
    }
  };
  const cases: Array<[string, Uint8Array, "fast" | "bail"]> = [
    ["missing key", observedBytes((w) => entry(w, undefined, str("v"))), "fast"],
    ["missing value", observedBytes((w) => entry(w, "k", undefined)), "fast"],
    ["empty value", observedBytes((w) => entry(w, "k", () => {})), "fast"],
    ["null_value other than 0", observedBytes((w) => entry(w, "k", (w) => void w.tag(1, 0).int32(3))), "fast"],
    [
      "a key twice",
      observedBytes((w) => {
        entry(w, "a", str("1"));
        entry(w, "b", str("2"));
        entry(w, "a", num(3));
      }),
      "fast",
    ],
    [
      "two kinds in one value",
      observedBytes((w) =>
        entry(w, "k", (w) => {
          str("x")(w);
          num(1)(w);
        }),
      ),
      "bail",
    ],
    [
      "struct_value twice in one value",
      observedBytes((w) =>
        entry(w, "k", (w) => {
          w.tag(5, 2).fork();
          entry(w, "a", num(1));
          w.join();
          w.tag(5, 2).fork();
          entry(w, "b", num(2));
          w.join();
        }),
      ),
      "bail",
    ],
    ["the Struct field twice", observedBytes((w) => entry(w, "a", num(1)), 2), "bail"],
    ["unknown field in a Struct", observedBytes((w) => void w.tag(2, 0).int32(1)), "bail"],
    ["unknown field in a Value", observedBytes((w) => entry(w, "k", (w) => void w.tag(9, 0).int32(1))), "bail"],
    ["truncated", observedBytes((w) => entry(w, "k", str("value"))).subarray(0, 12), "bail"],
  ];
  const codec = createMessageCodec();
  for (const [label, data, path] of cases) {
    t.equal(fastDecode(data), path, `${label}: ${path}`);
    t.same(
      outcome(() => codec.decode(ResourceResultSchema, data)),
      outcome(() => fromBinary(ResourceResultSchema, data)),
      `${label}: same result as protobuf-es`,
    );
  }
  // protobuf-es turns a "__proto__" key into the prototype of the object it builds; left to it.
  const proto = observedBytes((w) => entry(w, "__proto__", num(1)));
  t.equal(fastDecode(proto), "bail", "__proto__ key: bail");
  t.doesNotThrow(() => codec.decode(ResourceResultSchema, proto));
});
