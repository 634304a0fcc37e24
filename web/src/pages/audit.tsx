/**
 * Audit (/audit?agent=&operator=&event_type=&category=&after=&before=&cursor=&live=1): the filters of
 * GET /api/v1/audit under the API's own names, cursor paging (back is the browser's Back), and a Live
 * tail over SSE that prepends new events matching the same filters.
 * The filters fold behind a button on phones (audit/filter-form.tsx).
 */
import { useEffect, useMemo, useState } from "react";
import { type AuditEvent, useAuditPage } from "../api/audit";
import { ApiError } from "../api/client";
import { useAuditStream } from "../api/sse";
import { AUDIT_FILTERS, type AuditFilters, readAuditView } from "../lib/audit-query";
import { useUrlState } from "../lib/url-state";
import { EmptyState, Page, QueryStatus } from "../ui";
import { AuditRow } from "./audit/audit-row";
import { AuditFilterForm } from "./audit/filter-form";
import { LiveIndicator } from "./audit/live-indicator";
import "./pages.css";

/** Live events kept on screen; older ones are a page reload away. */
const MAX_LIVE = 500;

export default function AuditPage() {
  const [params, setParams] = useUrlState();
  const view = readAuditView(params);
  const filterKey = JSON.stringify(view.filters);
  // biome-ignore lint/correctness/useExhaustiveDependencies: filterKey is the filters' value identity.
  const filters = useMemo(() => view.filters, [filterKey]);

  const page = useAuditPage(filters, view.cursor);
  const events = page.data?.events ?? [];
  const onFirstPage = view.cursor === undefined;

  const [live, setLive] = useState<AuditEvent[]>([]);
  // A new view (filters, page) or Live switched off starts the live list afresh.
  // biome-ignore lint/correctness/useExhaustiveDependencies: reset on these changes only.
  useEffect(() => setLive([]), [filterKey, view.cursor, view.live]);
  const stream = useAuditStream<AuditEvent>(
    filters,
    view.live && page.data !== undefined && !page.isPlaceholderData && !page.error,
    (e) => setLive((prev) => (prev.some((p) => p.id === e.id) ? prev : [e, ...prev].slice(0, MAX_LIVE))),
    // Resume after the newest event shown, so nothing between the page load and the stream is missed.
    onFirstPage ? events[0]?.id : undefined,
  );

  const shown = new Set(events.map((e) => e.id));
  const fresh = live.filter((e) => !shown.has(e.id));

  // A refused filter is shown under its field, not a second time above the list.
  const filterProblem = AUDIT_FILTERS.some((f) => parameterError(page.error, f.name) !== undefined);

  function apply(draft: AuditFilters) {
    const update: Record<string, string | undefined> = { cursor: undefined };
    for (const { name } of AUDIT_FILTERS) update[name] = draft[name]?.trim() || undefined;
    setParams(update);
  }

  return (
    <Page
      title="Audit"
      actions={
        <div className="toolbar audit-live">
          <label className="check">
            <input
              type="checkbox"
              checked={view.live}
              onChange={(e) => setParams({ live: e.target.checked ? "1" : undefined }, { replace: true })}
            />
            Live
          </label>
          {view.live ? <LiveIndicator state={stream.state} detail={stream.detail} /> : null}
        </div>
      }
    >
      <AuditFilterForm filters={filters} errorFor={(name) => parameterError(page.error, name)} onApply={apply} />
      <QueryStatus
        query={{ data: page.data ?? (filterProblem ? null : undefined), error: filterProblem ? null : page.error }}
      >
        {events.length === 0 && fresh.length === 0 ? (
          <EmptyState title="No audit events match these filters." />
        ) : (
          <ul className="list" aria-label="Audit events">
            {fresh.map((e) => (
              <AuditRow key={e.id} event={e} isNew />
            ))}
            {events.map((e) => (
              <AuditRow key={e.id} event={e} />
            ))}
          </ul>
        )}
        <div className="toolbar">
          {!onFirstPage ? (
            <button type="button" className="btn" onClick={() => setParams({ cursor: undefined })}>
              Newest
            </button>
          ) : null}
          <button
            type="button"
            className="btn"
            disabled={!page.data?.has_more || !page.data.next_cursor}
            onClick={() => setParams({ cursor: page.data?.next_cursor ?? undefined })}
          >
            Next page
          </button>
        </div>
      </QueryStatus>
    </Page>
  );
}

/** The API names a bad query parameter in the problem's `parameter` member. */
function parameterError(error: unknown, name: string): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  return error.problem.parameter === name ? error.problem.detail : undefined;
}
