import { precondition } from "@orch/kit";

/** The approved content is no longer what would run: the approval is refused, nothing executes. */
export const planChanged = (why: string) =>
  precondition("plan_changed", `the change request's content changed since it was submitted: ${why}`);

/** What the request acts on is gone: it cannot be planned again (cancel it). */
export const cannotReplan = (why: string) =>
  precondition("replan_impossible", `the change request cannot be re-planned: ${why}`);
