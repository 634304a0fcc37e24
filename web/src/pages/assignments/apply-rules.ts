/** When Apply asks first, and how it says what it is about to do (pure: unit-tested). */

/** An apply reaching more than one agent, or an unknown number of them, is confirmed first. */
export function confirmsApply(matched: number | undefined): boolean {
  return matched === undefined || matched > 1;
}

/** "3 agents", "1 agent", or "every agent the selector matches" while the count is unknown. */
export function agentCount(matched: number | undefined): string {
  if (matched === undefined) return "every agent the selector matches";
  return `${matched} agent${matched === 1 ? "" : "s"}`;
}

/** Rows the assignment page lists; the fleet page (linked) shows all of them. */
export const MATCHED_SHOWN = 100;
