/** Maintenance windows as table rows and fields (pure). */
import type { MaintenanceWindow } from "@orch/client";
import { isoSeconds } from "./time.js";
import { idsOnly, type OperatorNames } from "../operator-names.js";

export const WINDOW_COLUMNS = ["ID", "START", "END", "ACTIVE", "REASON"];

export function windowRows(windows: readonly MaintenanceWindow[]): unknown[][] {
  return windows.map((w) => [w.id, isoSeconds(w.starts_at), isoSeconds(w.ends_at), w.active ? "yes" : "no", w.reason]);
}

/** "Added maintenance window …" before the fields of a window just changed. */
export const windowVerbLine = (verb: string, w: MaintenanceWindow) => `${verb} maintenance window ${w.id}`;

export function windowFields(w: MaintenanceWindow, names: OperatorNames = idsOnly): [string, unknown][] {
  return [
    ["id", w.id],
    ["starts_at", isoSeconds(w.starts_at)],
    ["ends_at", isoSeconds(w.ends_at)],
    ["active", w.active ? "yes" : "no"],
    ["reason", w.reason],
    ["created_by", names(w.created_by)],
  ];
}
