import { checkSecretDescription, checkSecretName, checkSecretValue, type Violation } from "@orch/contracts";
import { invalid } from "@orch/kit";

// The rules live in @orch/contracts so the gateway refuses exactly what this service refuses. Their
// messages describe the rule and never repeat the input: a value must not come back in an error.

const refuse = (v: Violation, field: string) => invalid(v.reason, `${field} ${v.message}`, { field });

export function checkName(name: string): string {
  const v = checkSecretName(name);
  if (v) throw refuse(v, "name");
  return name;
}

export function checkValue(value: string): string {
  const v = checkSecretValue(value);
  if (v) throw refuse(v, "value");
  return value;
}

/** Empty means none. */
export function checkDescription(d: string): string | null {
  const v = checkSecretDescription(d);
  if (v) throw refuse(v, "description");
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
