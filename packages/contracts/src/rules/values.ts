import type { Violation } from "./violation.js";

/**
 * Value sets (layered data per environment, docs/modules.md#values): the rules the gateway, the
 * state service, git sources and the CLI share.
 */

/** The set every agent gets first, below every selector-bound set; it has no selector. */
export const DEFAULTS_VALUE_SET = "defaults";

/**
 * A key at any depth: a letter or '_' first, then letters, digits, '_' or '-'. No '.', so a dotted
 * path (`nginx.upstreams`) names one key path unambiguously, and templates read it as `values.a.b`.
 */
export const VALUE_KEY_RE = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
export const VALUE_KEY_RULE = "1-64 characters of letters, digits, '_' or '-', starting with a letter or '_'";

/** Bytes of one set's YAML text (a set given as JSON is measured as the YAML it is stored as). */
export const VALUE_SET_MAX_BYTES = 256 * 1024;
/** Nesting of maps and lists in one set. */
export const VALUE_MAX_DEPTH = 32;
/** Priorities are int32 on the wire; a set's priority orders it among the selector-bound sets. */
export const VALUE_PRIORITY_MIN = -1_000_000;
export const VALUE_PRIORITY_MAX = 1_000_000;

/** `{{ secrets.x }}` (any spacing or whitespace control) inside a value: secrets stay in the secret store. */
export const SECRET_IN_VALUE_RE = /\{\{-?\s*secrets\s*[.[]/;

/** Names that would reach an object's prototype in the templates' JavaScript objects. */
const RESERVED_VALUE_KEYS = new Set(["__proto__", "constructor", "prototype"]);

export function checkValueKey(key: string): Violation | null {
  if (RESERVED_VALUE_KEYS.has(key)) return { reason: "invalid_values", message: "is a reserved name" };
  return VALUE_KEY_RE.test(key) ? null : { reason: "invalid_values", message: `must be ${VALUE_KEY_RULE}` };
}

export function checkValuePriority(priority: number): Violation | null {
  return Number.isInteger(priority) && priority >= VALUE_PRIORITY_MIN && priority <= VALUE_PRIORITY_MAX
    ? null
    : {
        reason: "invalid_values",
        message: `must be an integer from ${VALUE_PRIORITY_MIN} to ${VALUE_PRIORITY_MAX}`,
      };
}

/** A dotted key path as `values explain` takes it: `nginx.upstreams`. */
export function splitValuePath(path: string): string[] | null {
  const parts = path.split(".");
  return parts.every((p) => checkValueKey(p) === null) ? parts : null;
}

/** A git source's value sets: `values/<name>.yaml`, each a document with selector, priority, description, values. */
export const SOURCE_VALUES_DIR = "values";
