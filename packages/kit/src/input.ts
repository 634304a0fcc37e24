import { invalid, type OrchError } from "./errors.js";

// String.prototype.isWellFormed, which the ES2023 lib we compile against does not declare.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Characters no field of ours may carry: NUL (Postgres refuses 0x00 in text, so it would surface
 * as a 500 far from the caller) and lone UTF-16 surrogates (not encodable as UTF-8: they would be
 * silently replaced on the bus or in the database, so two different inputs would become one).
 */
export function invalidCharacter(s: string): "nul" | "surrogate" | undefined {
  if (s.includes("\0")) return "nul";
  if (LONE_SURROGATE.test(s)) return "surrogate";
  return undefined;
}

export interface InvalidString {
  /** Dotted path of the offending value, e.g. `spec.items.3.name` ("(root)" for the value itself). */
  field: string;
  problem: "nul" | "surrogate";
}

/**
 * Finds the first string (value or object key) with an invalid character in any JSON-like or
 * decoded protobuf value: objects, arrays, maps and google.protobuf.Struct values all decode to
 * plain objects and arrays. Byte arrays are data, not text, and are skipped. Iterative, so a
 * hostile nesting depth cannot overflow the stack.
 */
export function findInvalidString(value: unknown): InvalidString | undefined {
  const stack: Array<[unknown, string]> = [[value, ""]];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === "string") {
      const problem = invalidCharacter(v);
      if (problem) return { field: path || "(root)", problem };
      continue;
    }
    if (v === null || typeof v !== "object" || ArrayBuffer.isView(v)) continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], path ? `${path}.${i}` : String(i)]);
      continue;
    }
    for (const [k, child] of Object.entries(v)) {
      // protobuf-es' type tag is ours, not the caller's.
      if (k === "$typeName") continue;
      const p = path ? `${path}.${k}` : k;
      const problem = invalidCharacter(k);
      if (problem) return { field: p, problem };
      stack.push([child, p]);
    }
  }
  return undefined;
}

const WHAT = { nul: "a NUL character", surrogate: "an unpaired UTF-16 surrogate" } as const;

/** INVALID_ARGUMENT `invalid_characters` naming where the bad string was found. */
export function invalidCharactersError(found: InvalidString, location?: string): OrchError {
  const field = found.field === "(root)" ? "" : `field '${found.field}' `;
  const where = location ? `${location} ${field}` : field;
  return invalid("invalid_characters", `${where}contains ${WHAT[found.problem]}`.replace(/\s+/g, " "), {
    ...(location ? { location } : {}),
    field: found.field,
  });
}

/** Throws `invalid_characters` when any string in `value` carries NUL or a lone surrogate. */
export function rejectInvalidStrings(value: unknown, location?: string): void {
  const found = findInvalidString(value);
  if (found) throw invalidCharactersError(found, location);
}
