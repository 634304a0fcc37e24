/**
 * Change requests (/requests?to_approve=true | ?mine=true, or all): actions an approval policy held
 * for four-eyes review (docs/approvals.md), newest first, paged by cursor. "To approve" lists the
 * pending requests the operator may still decide. Admins reach the approval policies from here.
 * Not a top-level nav entry (the desktop nav would wrap): linked from the Assignments page.
 */
import { Link } from "wouter";
import { useChangeRequests, useToApproveCount } from "../api/approvals";
import { useSession } from "../api/session";
import { useUrlState } from "../lib/url-state";
import { EmptyState, Page, QueryStatus, Section, Time } from "../ui";
import { Pager } from "../ui/pager";
import "./pages.css";
import { TableRegion } from "./parts/table-region";
import { approvalsOf, FilterTabs, FILTERS, filterOf, RequestStatus } from "./requests/request-status";
import "./requests/requests.css";

const EMPTY = {
  to_approve: "Nothing waits for your approval.",
  mine: "You have no change requests.",
  all: "No change requests.",
} as const;

export default function RequestsPage() {
  const { isAdmin } = useSession();
  const [params, setParams] = useUrlState();
  const filter = filterOf(params);
  const cursor = params.get("cursor") ?? undefined;
  const list = useChangeRequests(filter, cursor);
  const toApprove = useToApproveCount();
  const requests = list.data?.requests ?? [];
  const label = FILTERS.find((f) => f.filter === filter)?.label ?? "All";
  return (
    <Page
      title="Change requests"
      actions={
        isAdmin ? (
          <Link href="/approval-policies" className="btn">
            Approval policies
          </Link>
        ) : null
      }
    >
      <FilterTabs current={filter} toApprove={toApprove.count} />
      <Section title={label}>
        <QueryStatus query={list}>
          {requests.length ? (
            <TableRegion label={`Change requests: ${label}`}>
              <table className="table cards">
                <thead>
                  <tr>
                    <th scope="col">Action</th>
                    <th scope="col">Target</th>
                    <th scope="col">Requester</th>
                    <th scope="col">Status</th>
                    <th scope="col">Approvals</th>
                    <th scope="col">Age</th>
                    <th scope="col">Expires</th>
                  </tr>
                </thead>
                <tbody>
                  {requests.map((r) => (
                    <tr key={r.id} data-testid="request-row">
                      <td data-label="Action">
                        <Link href={`/requests/${encodeURIComponent(r.id)}`} className="mono">
                          {r.action}
                        </Link>
                      </td>
                      <td data-label="Target">
                        <span className="muted">{r.target_type}</span> {r.target_name}
                      </td>
                      <td data-label="Requester">{r.requester.name}</td>
                      <td data-label="Status">
                        <RequestStatus request={r} />
                      </td>
                      <td data-label="Approvals">{approvalsOf(r)}</td>
                      <td data-label="Age">
                        <Time value={r.created_at} />
                      </td>
                      <td data-label="Expires">
                        {r.status === "pending" ? <Time value={r.expires_at} /> : <span className="muted">—</span>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableRegion>
          ) : (
            <EmptyState title={EMPTY[filter]}>
              An apply or other action an approval policy covers becomes a request here (docs/approvals.md).
            </EmptyState>
          )}
          <Pager
            cursor={cursor}
            nextCursor={list.data?.has_more ? list.data.next_cursor : null}
            onCursor={(c) => setParams({ cursor: c })}
          />
        </QueryStatus>
      </Section>
    </Page>
  );
}
