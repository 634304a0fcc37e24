import { secretMasker } from "@orch/contracts";

/**
 * Builds a function replacing every secret, and its common encodings and reversal, with `***`
 * (the rule lives in @orch/contracts: the state service masks with the same one).
 */
export function masker(mask: readonly string[]): (s: string) => string {
  return secretMasker(mask);
}

/** Whether any string inside a JSON value contains one of `values` (empty ones never match). */
export function mentionsAny(v: unknown, values: readonly string[]): boolean {
  if (values.length === 0) return false;
  if (typeof v === "string") return values.some((x) => x !== "" && v.includes(x));
  if (Array.isArray(v)) return v.some((x) => mentionsAny(x, values));
  if (v && typeof v === "object") return Object.values(v).some((x) => mentionsAny(x, values));
  return false;
}

/** Masks every string inside a JSON value (observed state). */
export function maskJson(v: unknown, mask: (s: string) => string): unknown {
  if (typeof v === "string") return mask(v);
  if (Array.isArray(v)) return v.map((x) => maskJson(x, mask));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, maskJson(x, mask)]));
  return v;
}
