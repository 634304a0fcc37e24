import { RESTARTABLE_TYPES } from "@orch/contracts";
/**
 * What `onchanges` and `triggered_by` decide for one resource, from the statuses of the resources
 * that ran before it in this operation. Pure: execute.ts runs the providers; this only says whether
 * the resource runs and whether a service is asked to refresh. In a plan a status of `changed`
 * means "would change", so the same decision makes the plan exact.
 */

export type Status = "ok" | "changed" | "failed" | "skipped" | "unsupported";

export interface TriggerNode {
  key: string;
  type: string;
  /** Runs only when one of these changed (empty: runs unconditionally). */
  onchanges: readonly string[];
  /** Refreshed (restart/reload) when one of these changed, unless one of them did not succeed. */
  triggeredBy: readonly string[];
}

export type Decision =
  /** Run the resource; `refresh` lists the triggers that changed (a service restarts once, after them). */
  | { run: true; refresh?: string[]; note?: string }
  /** Do not run it; report this instead. */
  | { run: false; status: Status; message: string };

/** Types whose provider can refresh (restart/reload); the state service sends triggered_by to these only. */
export const REFRESHABLE = RESTARTABLE_TYPES;

const succeeded = (s: Status | undefined) => s === "ok" || s === "changed";

/** `a`, `a and b`, `a, b and c`: how messages list resource keys. */
export function listKeys(keys: readonly string[]): string {
  if (keys.length <= 1) return keys.join("");
  return `${keys.slice(0, -1).join(", ")} and ${keys[keys.length - 1]}`;
}

export function decide(node: TriggerNode, statusOf: ReadonlyMap<string, Status>, mode: "plan" | "apply"): Decision {
  if (node.triggeredBy.length > 0 && !REFRESHABLE.has(node.type))
    return {
      run: false,
      status: "failed",
      message: `a ${node.type} resource cannot be refreshed (triggered_by is for ${[...REFRESHABLE].join(", ")})`,
    };
  if (node.onchanges.length > 0) {
    // A trigger that did not succeed: what it would have changed is unknown, so nothing runs on it.
    const bad = node.onchanges.find((k) => !succeeded(statusOf.get(k)));
    if (bad !== undefined)
      return { run: false, status: "skipped", message: `skipped: onchanges ${bad}, which is ${statusOf.get(bad)}` };
    if (!node.onchanges.some((k) => statusOf.get(k) === "changed"))
      return {
        run: false,
        status: "ok",
        message:
          mode === "plan"
            ? `would not run: none of ${listKeys(node.onchanges)} would change`
            : `not run: none of ${listKeys(node.onchanges)} changed`,
      };
  }
  if (node.triggeredBy.length === 0) return { run: true };
  const failed = node.triggeredBy.filter((k) => !succeeded(statusOf.get(k)));
  if (failed.length > 0)
    return {
      run: true,
      note: `${mode === "plan" ? "would not refresh" : "not refreshed"}: ${listKeys(failed.map((k) => `${k} is ${statusOf.get(k) ?? "not run"}`))}`,
    };
  const changed = node.triggeredBy.filter((k) => statusOf.get(k) === "changed");
  return changed.length > 0 ? { run: true, refresh: changed } : { run: true };
}
