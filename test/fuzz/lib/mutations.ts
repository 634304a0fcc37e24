import fc from "fast-check";
import { validValue, type Schema } from "./json-schema-arb.js";

/** Strings that have broken parsers, databases and encoders elsewhere. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "a\u0000b",
    "\u0000",
    "\ud800",
    "x\udfffy",
    "\u202egnp.exe",
    "e\u0301\u0301\u0301",
    "🧨💥",
    "\uFEFFbom",
    "' OR 1=1 --",
    "'; DROP TABLE agents; --",
    "../../../../etc/passwd",
    "%s%n%x",
    "${7*7}{{7*7}}",
    "<script>alert(1)</script>",
    "\\",
    '"',
    "__proto__",
    "constructor",
    "null",
    "-1",
    "1e309",
    "NaN",
    "9".repeat(400),
    "\r\n\r\nHTTP/1.1 200 OK",
  ),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  // Huge: past every documented maxLength, short of the body limit.
  fc.integer({ min: 5_000, max: 300_000 }).map((n) => "x".repeat(n)),
);

/** A value of (usually) the wrong type or out of range for `s`. */
export function wrongValue(s: Schema | undefined): fc.Arbitrary<unknown> {
  const t = Array.isArray(s?.type) ? s?.type[0] : s?.type;
  const outOfRange: unknown[] =
    t === "integer" || t === "number"
      ? [
          (s?.minimum ?? 0) - 1,
          (s?.maximum ?? Number.MAX_SAFE_INTEGER) + 1,
          1.5,
          -0,
          Number.MAX_SAFE_INTEGER + 2,
          -1e308,
          1e308,
          "12",
        ]
      : [];
  return fc.oneof(
    fc.constantFrom(null, true, false, 0, -1, 1e308, "", [], {}, ...outOfRange),
    nastyString,
    fc.array(nastyString, { maxLength: 3 }),
    fc.dictionary(nastyString, nastyString, { maxKeys: 3 }),
    fc.jsonValue({ maxDepth: 3 }),
  );
}

/** A valid object for `s` with exactly one thing wrong: a required key missing, an extra key, a bad value. */
export function mutatedObject(s: Schema): fc.Arbitrary<unknown> {
  const props = Object.keys(s.properties ?? {});
  const base = validValue(s) as fc.Arbitrary<unknown>;
  const mutations: fc.Arbitrary<(o: Record<string, unknown>) => unknown>[] = [
    fc.tuple(nastyString, wrongValue(undefined)).map(([k, v]) => (o) => ({ ...o, [k === "" ? "extra" : k]: v })),
    fc.constant(() => []),
    wrongValue(s).map((v) => () => v),
  ];
  if (props.length > 0) {
    mutations.push(
      fc.tuple(fc.constantFrom(...props), fc.boolean()).chain(([k, drop]) =>
        (drop ? fc.constant(undefined) : wrongValue(s.properties?.[k])).map((v) => (o: Record<string, unknown>) => {
          const out = { ...o };
          if (drop) delete out[k];
          else out[k] = v;
          return out;
        }),
      ),
      // Deep but under the gateway's nesting limit: reaches zod and the encoders behind it.
      fc.tuple(fc.constantFrom(...props), fc.integer({ min: 2, max: 30 })).map(([k, n]) => (o) => {
        let v: unknown = "leaf";
        for (let i = 0; i < n; i++) v = i % 2 ? [v] : { [k]: v };
        return { ...o, [k]: v };
      }),
    );
  }
  return fc
    .tuple(base, fc.oneof(...mutations))
    .map(([o, m]) => m(o !== null && typeof o === "object" && !Array.isArray(o) ? (o as Record<string, unknown>) : {}));
}

/** Raw request bodies no schema describes: broken, deep, huge or oddly encoded JSON. */
export const rawBody: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: 33, max: 10_000 }).map((n) => "[".repeat(n) + "]".repeat(n)),
  fc.integer({ min: 33, max: 10_000 }).map((n) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`),
  fc.integer({ min: 1, max: 100_000 }).map((n) => "[".repeat(n)),
  fc.constantFrom(
    "",
    "   ",
    "{",
    "}",
    "null",
    "[]",
    "0",
    '"str"',
    "1e999",
    '{"a":1,"a":2}',
    '{"name":"\\u0000"}',
    '{"name":"\\ud800"}',
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"x":1}}}',
    "\uFEFF{}",
    "{'single':1}",
    "NaN",
    "\u0000",
  ),
  // Past the 1 MiB body limit.
  fc.integer({ min: 1_048_577, max: 1_300_000 }).map((n) => `{"x":"${"a".repeat(n)}"}`),
  // Wide rather than deep.
  fc
    .integer({ min: 1_000, max: 20_000 })
    .map((n) => `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(",")}}`),
  fc.string({ unit: "binary", maxLength: 200 }),
);
