import fc from "fast-check";

/** The JSON Schema (2020-12) subset the gateway's zod declarations produce for parameters and bodies. */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  propertyNames?: Schema;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  default?: unknown;
  format?: string;
  [k: string]: unknown;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function stringArb(s: Schema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  // Long valid strings are the mutations' job; a valid value keeps handlers' work small.
  const max = Math.max(min, Math.min(s.maxLength ?? 24, 64));
  const fits = (v: string) => v.length >= min && v.length <= (s.maxLength ?? Number.POSITIVE_INFINITY);
  if (s.pattern) {
    try {
      const matching = fc.stringMatching(new RegExp(s.pattern)).filter(fits);
      // A pattern whose shortest match exceeds maxLength would make the filter spin: cap with a fallback.
      return fc.oneof(
        { weight: 9, arbitrary: matching },
        { weight: 1, arbitrary: fc.string({ minLength: min, maxLength: max }) },
      );
    } catch {
      // A pattern fast-check cannot invert (lookarounds): plain strings, often refused, still useful.
    }
  }
  return fc.oneof(
    { weight: 3, arbitrary: fc.string({ minLength: min, maxLength: max }) },
    // Valid but far from ASCII: every Unicode plane, combining marks, emoji.
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", minLength: min, maxLength: max }) },
  );
}

function integerArb(s: Schema): fc.Arbitrary<number> {
  const lo = Math.max(s.minimum ?? -MAX_SAFE, (s.exclusiveMinimum ?? -MAX_SAFE - 1) + 1, -MAX_SAFE);
  const hi = Math.min(s.maximum ?? MAX_SAFE, (s.exclusiveMaximum ?? MAX_SAFE + 1) - 1, MAX_SAFE);
  const near = Math.max(lo, Math.min(hi, 0));
  return fc.oneof(
    // Small values are the ones handlers act on (limits, waits, counts); the extremes test the bounds.
    { weight: 4, arbitrary: fc.integer({ min: near, max: Math.min(hi, near + 100) }) },
    { weight: 1, arbitrary: fc.constantFrom(lo, hi) },
    { weight: 1, arbitrary: fc.double({ min: lo, max: hi, noNaN: true }).map((d) => Math.trunc(d)) },
  );
}

/** Values that satisfy `s` (best effort for patterns: a few misses are harmless, they test refusals). */
export function validValue(s: Schema | boolean | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (s === undefined || s === true || (typeof s === "object" && Object.keys(s).length === 0))
    return depth > 3 ? fc.constant(null) : fc.jsonValue({ maxDepth: 2 });
  if (s === false) return fc.constant(undefined);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return fc.oneof(...alts.map((a) => validValue(a, depth + 1)));
  if (Array.isArray(s.type)) return fc.oneof(...s.type.map((t) => validValue({ ...s, type: t }, depth)));
  switch (s.type) {
    case "string":
      return stringArb(s);
    case "integer":
      return integerArb(s);
    case "number":
      return fc.double({
        min: s.minimum ?? -1e9,
        max: s.maximum ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const minLength = s.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(s.maxItems ?? 3, 3));
      return fc.array(validValue(s.items, depth + 1), { minLength, maxLength });
    }
    case "object":
    case undefined:
      return objectArb(s, depth);
    default:
      return fc.constant(null);
  }
}

function objectArb(s: Schema, depth: number): fc.Arbitrary<unknown> {
  const props = s.properties ?? {};
  const required = (s.required ?? []).filter((k) => k in props);
  const fixed = fc.record(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, validValue(v, depth + 1)])), {
    requiredKeys: required,
  });
  const extra = s.additionalProperties;
  if (!extra || Object.keys(props).length > 0) return fixed;
  // A map (tags, env, config): keys from propertyNames.
  const keys = s.propertyNames
    ? (validValue(s.propertyNames, depth + 1) as fc.Arbitrary<string>)
    : fc.string({ maxLength: 12 });
  return fc.dictionary(
    keys.filter((k) => typeof k === "string"),
    validValue(extra, depth + 1),
    { maxKeys: 3 },
  );
}
