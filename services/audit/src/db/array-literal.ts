// Postgres array literals for the batch insert's unnest() parameters, built here rather than by
// pg's generic array serialisation (two regex replacements and a prepareValue call per element),
// which was the largest share of the ingest's own CPU after decoding.

const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;

/** `{"a","b\"c"}`: every element quoted (so "NULL", "", braces and commas stay text). */
export function textArray(values: readonly string[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    out += `${i ? "," : ""}"${NEEDS_ESCAPE.test(v) ? v.replace(ESCAPED, "\\$&") : v}"`;
  }
  return `${out}}`;
}

/** `{1,2,3}` for a bigint[] (integers print without quotes or exponent below 2^53). */
export function integerArray(values: readonly number[]): string {
  return `{${values.join(",")}}`;
}
