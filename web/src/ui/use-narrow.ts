import { useSyncExternalStore } from "react";

/**
 * Phone width: the breakpoint of theme.css's and pages.css's `@media (max-width: 600px)` rules
 * (CSS cannot import it; keep the two equal). Only for what CSS cannot decide, such as the row
 * height a virtualised list is told.
 */
export const NARROW = "(max-width: 600px)";

function subscribe(onChange: () => void): () => void {
  const query = window.matchMedia(NARROW);
  query.addEventListener("change", onChange);
  return () => query.removeEventListener("change", onChange);
}

/** Whether the window is phone-width now; re-renders when that changes. */
export function useNarrow(): boolean {
  return useSyncExternalStore(subscribe, () => window.matchMedia(NARROW).matches);
}
