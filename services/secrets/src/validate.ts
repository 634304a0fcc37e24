import { invalid } from "@orch/kit";

export const NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;
export const MAX_VALUE_BYTES = 64 * 1024;
export const MAX_DESCRIPTION = 1024;

// Messages describe the rule and never repeat the input: a value must not come back in an error.

export function checkName(name: string): string {
  // "." and ".." cannot be addressed in a URL path (clients normalise them away).
  if (!NAME_RE.test(name) || name === "." || name === "..")
    throw invalid(
      "invalid_name",
      "name must be 1-128 characters of A-Z, a-z, 0-9, '_', '.' and '-' (not '.' or '..')",
      { field: "name" },
    );
  return name;
}

export function checkValue(value: string): string {
  if (value.length === 0) throw invalid("invalid_value", "value must not be empty", { field: "value" });
  if (/\p{Cs}/u.test(value))
    throw invalid("invalid_value", "value must be well-formed Unicode text", { field: "value" });
  if (Buffer.byteLength(value, "utf8") > MAX_VALUE_BYTES)
    throw invalid("value_too_large", `value must be at most ${MAX_VALUE_BYTES} bytes of UTF-8`, { field: "value" });
  return value;
}

/** Empty means none. */
export function checkDescription(d: string): string | null {
  if ([...d].length > MAX_DESCRIPTION)
    throw invalid("invalid_description", `description must be at most ${MAX_DESCRIPTION} characters`, {
      field: "description",
    });
  return d === "" ? null : d;
}

/** 0 means never; otherwise a time after `now`. */
export function checkExpiry(ms: number, now: number): number | null {
  if (ms === 0) return null;
  if (!Number.isFinite(ms) || ms < 0 || ms > 253_402_300_799_999)
    throw invalid("invalid_expires_at", "expires_at must be a valid time", { field: "expires_at" });
  if (ms <= now) throw invalid("expires_at_in_past", "expires_at must be in the future", { field: "expires_at" });
  return Math.trunc(ms);
}
