/**
 * View state in the query string: a page reads its filters from the URL and writes them back, so
 * every view is bookmarkable and back/forward move between views.
 */
import { useCallback } from "react";
import { useSearchParams } from "wouter";

export type ParamUpdate = Record<string, string | undefined | null>;

/** Applies updates to a copy of the params; blank or null values are removed. */
export function withParams(current: URLSearchParams, update: ParamUpdate): URLSearchParams {
  const next = new URLSearchParams(current);
  for (const [k, v] of Object.entries(update)) {
    if (v == null || v === "") next.delete(k);
    else next.set(k, v);
  }
  return next;
}

/**
 * [params, set]: `set(update, {replace})` changes some parameters. Typing-driven changes replace the
 * history entry (one entry per view, not per keystroke); explicit actions push one.
 */
export function useUrlState(): [URLSearchParams, (update: ParamUpdate, opts?: { replace?: boolean }) => void] {
  const [params, setParams] = useSearchParams();
  const set = useCallback(
    (update: ParamUpdate, opts: { replace?: boolean } = {}) => {
      const next = withParams(params, update);
      // An unchanged view adds no history entry.
      if (next.toString() === params.toString()) return;
      setParams(next, { replace: opts.replace ?? false });
    },
    [params, setParams],
  );
  return [params, set];
}
