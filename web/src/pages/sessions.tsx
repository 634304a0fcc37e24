/**
 * Terminal sessions (/sessions?status=&cursor=): operators see the ones they opened, admins all of
 * them (the API decides). Each row opens its recording; a live session of mine can be re-attached.
 */
import { Link } from "wouter";
import { useSession } from "../api/session";
import { SESSION_STATUSES, type TerminalSummary, useTerminalSessions } from "../api/terminal";
import { stateOfSession, statusText } from "../lib/terminal-socket";
import { useUrlState } from "../lib/url-state";
import { Badge, EmptyState, Field, Page, QueryStatus, Section, Time, toneOf } from "../ui";
import "./pages.css";
import { PagedTable } from "./parts/item-table";

const live = (s: TerminalSummary) => s.status === "open" || s.status === "opening";

function duration(s: TerminalSummary): string {
  if (s.closed_at === null) return "—";
  const secs = Math.max(0, s.closed_at - s.opened_at);
  if (secs < 60) return `${secs} s`;
  if (secs < 3600) return `${Math.floor(secs / 60)} min ${secs % 60} s`;
  return `${Math.floor(secs / 3600)} h ${Math.floor((secs % 3600) / 60)} min`;
}

export default function SessionsPage() {
  const { operator: me } = useSession();
  const [params, setParams] = useUrlState();
  const status = params.get("status") ?? "";
  const cursor = params.get("cursor") ?? undefined;
  const list = useTerminalSessions(status, cursor);
  const sessions = list.data?.sessions ?? [];

  return (
    <Page title="Sessions">
      <div className="toolbar">
        <Field label="Status">
          <select value={status} onChange={(e) => setParams({ status: e.target.value, cursor: undefined })}>
            <option value="">any</option>
            {SESSION_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <Section title="Terminal sessions">
        <QueryStatus query={list}>
          <PagedTable
            label="Terminal sessions"
            columns={["Session", "Agent", "Operator", "Status", "Opened", "Duration", "Actions"]}
            items={sessions}
            empty={<EmptyState title="No terminal sessions." />}
            cursor={cursor}
            nextCursor={list.data?.nextCursor}
            onCursor={(c) => setParams({ cursor: c })}
          >
            {(s) => (
              <tr key={s.session_id}>
                <td>
                  <Link
                    href={`/sessions/${encodeURIComponent(s.session_id)}`}
                    className="mono"
                    aria-label={`Session ${s.session_id} on ${s.node_name}`}
                  >
                    {s.session_id}
                  </Link>
                </td>
                <td>{s.node_name}</td>
                <td>
                  {s.operator_name}
                  {s.operator_id === me.id ? <span className="muted"> (you)</span> : null}
                </td>
                <td>
                  <Badge tone={live(s) ? "ok" : toneOf(s.status)} title={s.close_reason ?? undefined}>
                    {live(s) ? s.status : statusText(stateOfSession(s))}
                  </Badge>
                </td>
                <td>
                  <Time value={s.opened_at * 1000} />
                </td>
                <td>{duration(s)}</td>
                <td>
                  {s.status === "open" && s.operator_id === me.id ? (
                    <Link href={`/terminal/${encodeURIComponent(s.session_id)}`} className="btn btn-small">
                      Re-attach
                    </Link>
                  ) : null}
                </td>
              </tr>
            )}
          </PagedTable>
        </QueryStatus>
      </Section>
    </Page>
  );
}
