import { invalid } from "@orch/kit";

// Year 9999: beyond it ISO strings and most clients break.
const MAX_MS = 253_402_300_799_000;

export function checkTime(field: string, v: number) {
  if (!Number.isInteger(v) || v < 0 || v > MAX_MS)
    throw invalid("invalid_request", `${field} must be a Unix time between 0 and year 9999`, { field });
}

export function checkSpan(w: { starts_at: number; ends_at: number }) {
  if (!(w.starts_at < w.ends_at))
    throw invalid("invalid_window", "starts_at must be before ends_at", { field: "ends_at" });
}

export function checkReason(reason: string) {
  if (reason.trim() === "" || reason.length > 1000)
    throw invalid("invalid_request", "reason must be 1-1000 characters", { field: "reason" });
}
