import type { ReactNode } from "react";
import { ProblemMessage } from "./problem";

export function Loading({ label = "Loading…" }: { label?: string }) {
  return (
    <p className="loading" role="status">
      {label}
    </p>
  );
}

/**
 * The states of a query in one place: loading, the API's error (detail + code), or the content. Data
 * already shown stays shown when a later refetch fails (the error is added above it): never a blank page.
 */
export function QueryStatus({ query, children }: { query: { data?: unknown; error: unknown }; children: ReactNode }) {
  if (query.data !== undefined) {
    return (
      <>
        {query.error ? <ProblemMessage error={query.error} /> : null}
        {children}
      </>
    );
  }
  if (query.error) return <ProblemMessage error={query.error} />;
  return <Loading />;
}
