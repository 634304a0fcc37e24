/** Maintenance windows' times: the API speaks Unix seconds, the form datetime-local (local time). */

const pad = (n: number) => String(n).padStart(2, "0");

/** A datetime-local value for `ms`, to the minute (the form's precision). */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** Unix seconds for a datetime-local value, or undefined when it is blank or not a time. */
export function fromLocalInput(local: string): number | undefined {
  if (local.trim() === "") return undefined;
  const ms = new Date(local).getTime();
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/** Whether a window covers `nowMs` (the API's `active` is as of its answer; this stays true later). */
export function isActiveAt(w: { starts_at: number; ends_at: number }, nowMs: number): boolean {
  return w.starts_at * 1000 <= nowMs && nowMs < w.ends_at * 1000;
}

export type WindowPhase = "active" | "upcoming" | "ended";

export function phaseOf(w: { starts_at: number; ends_at: number }, nowMs: number): WindowPhase {
  if (nowMs < w.starts_at * 1000) return "upcoming";
  return isActiveAt(w, nowMs) ? "active" : "ended";
}

/** The form's own check before a round trip: both times given, start before end. */
export function spanError(startsAt: number | undefined, endsAt: number | undefined): string | undefined {
  if (startsAt === undefined) return "Starts is required";
  if (endsAt === undefined) return "Ends is required";
  return startsAt < endsAt ? undefined : "Ends must be after Starts";
}
