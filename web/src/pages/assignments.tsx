/**
 * Assignments (/assignments?q=): which modules are kept on which agents (a selector). Operators and
 * admins both create, edit and delete them (the API allows operators); a name filter lives in the URL.
 * A notice names the approval policies that hold applies (ApprovalBanner).
 */
import { useState } from "react";
import { Link } from "wouter";
import { useToApproveCount } from "../api/approvals";
import { useAssignments, useDeleteAssignment } from "../api/assignments";
import {
  DeleteWithConfirm,
  EmptyState,
  FilterField,
  Page,
  ProblemMessage,
  QueryStatus,
  Time,
  useListFilter,
} from "../ui";
import "./pages.css";
import "./requests/requests.css";
import { ApprovalBanner } from "./parts/approval-banner";
import { ItemTable } from "./parts/item-table";
import { ManagedNameCell, ownerOf } from "./sources/managed-by";
import type { HeldCatalogWrite } from "../api/catalog-held";
import { CatalogHeldNotice } from "./catalog-held-notice";

/**
 * Change requests (applies an approval policy held, and other held actions) have no nav entry: the
 * desktop nav would wrap. They are reached here, with how many wait for this operator's decision.
 */
function RequestsLink() {
  const { count, more } = useToApproveCount();
  return (
    <Link href={count ? "/requests?to_approve=true" : "/requests"} className="btn" data-testid="requests-link">
      Change requests
      {count ? (
        <span className="inbox-badge has-unread requests-badge">
          {count}
          {more ? "+" : ""}
          <span className="visually-hidden"> to approve</span>
        </span>
      ) : null}
    </Link>
  );
}

export default function AssignmentsPage() {
  const list = useAssignments();
  const [held, setHeld] = useState<HeldCatalogWrite | undefined>();
  const remove = useDeleteAssignment(setHeld);
  const all = list.data ?? [];
  const filter = useListFilter(
    all,
    (a, needle) =>
      a.name.includes(needle) || a.selector.toLowerCase().includes(needle) || a.modules.some((m) => m.includes(needle)),
  );
  const shown = filter.shown;

  return (
    <Page
      title="Assignments"
      actions={
        <>
          <RequestsLink />
          <Link href="/assignments/new" className="btn btn-primary">
            New assignment
          </Link>
        </>
      }
    >
      <ApprovalBanner action="assignment.apply" />
      <FilterField value={filter.query} onChange={filter.setQuery} placeholder="name, selector or module" />
      {remove.error ? <ProblemMessage error={remove.error} /> : null}
      {held ? <CatalogHeldNotice held={held} /> : null}
      <QueryStatus query={list}>
        <ItemTable
          label="Assignments"
          columns={["Name", "Selector", "Modules", "Description", "Created", "Actions"]}
          items={shown}
          empty={
            <EmptyState title={all.length === 0 ? "No assignments yet." : "No assignment matches the filter."}>
              {all.length === 0 ? "An assignment keeps modules on the agents its selector matches." : null}
            </EmptyState>
          }
        >
          {(a) => {
            const owner = ownerOf(a);
            return (
              <tr key={a.name}>
                <ManagedNameCell item={a} href={`/assignments/${encodeURIComponent(a.name)}`} />
                <td className="mono">{a.selector}</td>
                <td>
                  {a.modules.map((m, i) => (
                    <span key={m}>
                      {i > 0 ? ", " : null}
                      <Link href={`/modules/${encodeURIComponent(m)}`}>{m}</Link>
                    </span>
                  ))}
                </td>
                <td>{a.description || <span className="muted">—</span>}</td>
                <td>
                  <Time value={a.created_at} />
                </td>
                <td>
                  {owner ? (
                    // Changed in its repository; the API would refuse (managed_by_source).
                    <span className="muted">in git</span>
                  ) : (
                    <div className="toolbar">
                      <Link
                        href={`/assignments/${encodeURIComponent(a.name)}/edit`}
                        className="btn btn-small"
                        aria-label={`Edit ${a.name}`}
                      >
                        Edit
                      </Link>
                      <DeleteWithConfirm
                        mutation={remove}
                        target={a.name}
                        title={`Delete assignment ${a.name}?`}
                        small
                        accessibleName={`Delete ${a.name}`}
                        showProblem={false}
                      >
                        <p>
                          Agents keep what was applied; its modules are no longer applied to them by this assignment.
                        </p>
                      </DeleteWithConfirm>
                    </div>
                  )}
                </td>
              </tr>
            );
          }}
        </ItemTable>
      </QueryStatus>
    </Page>
  );
}
