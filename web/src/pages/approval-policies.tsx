/**
 * Approval policies (/approval-policies?new=1, admins): which actions on which agents need how many
 * approvals from whom (docs/approvals.md); "Add policy" opens the form. Reached from the Requests
 * page (not a nav entry: the desktop nav would wrap).
 */
import { useState } from "react";
import { Link } from "wouter";
import { useApprovalPolicies, useSaveApprovalPolicy } from "../api/approvals";
import { useSession } from "../api/session";
import { useUrlState } from "../lib/url-state";
import { Banner, EmptyState, Page, QueryStatus, Section, Time } from "../ui";
import { PolicyForm } from "./approval-policies/policy-form";
import "./pages.css";
import { TableRegion } from "./parts/table-region";
import "./requests/requests.css";
import { ManagedNameCell } from "./sources/managed-by";

export const expiryText = (s: number) => (s % 3600 === 0 ? `${s / 3600} h` : `${Math.round(s / 60)} min`);

export default function ApprovalPoliciesPage() {
  const { isAdmin } = useSession();
  const [params, setParams] = useUrlState();
  const [added, setAdded] = useState<string | undefined>();
  const creating = isAdmin && params.get("new") === "1";
  const save = useSaveApprovalPolicy();
  const list = useApprovalPolicies();
  const policies = list.data ?? [];
  return (
    <Page
      title="Approval policies"
      actions={
        isAdmin && !creating ? (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              save.reset();
              setAdded(undefined);
              setParams({ new: "1" });
            }}
          >
            Add policy
          </button>
        ) : null
      }
    >
      <p>
        <Link href="/requests?to_approve=true">← Change requests</Link>
      </p>
      {creating ? (
        <Section title="New approval policy">
          <PolicyForm
            submitLabel="Add policy"
            pending={save.isPending}
            error={save.error}
            onSubmit={({ name, body }) =>
              save.mutate(
                { name, body },
                {
                  onSuccess: (p) => {
                    setAdded(p.name);
                    setParams({ new: undefined }, { replace: true });
                  },
                },
              )
            }
            extra={
              <button type="button" className="btn" onClick={() => setParams({ new: undefined })}>
                Cancel
              </button>
            }
          />
        </Section>
      ) : null}
      {added ? (
        <Banner kind="success">
          Added approval policy <Link href={`/approval-policies/${encodeURIComponent(added)}`}>{added}</Link>.
        </Banner>
      ) : null}
      <Section title="Policies">
        <QueryStatus query={list}>
          {policies.length ? (
            <TableRegion label="Approval policies">
              <table className="table cards">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Actions</th>
                    <th scope="col">Selector</th>
                    <th scope="col">Approvals</th>
                    <th scope="col">Approvers</th>
                    <th scope="col">Expiry</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {policies.map((p) => (
                    <tr key={p.name}>
                      <ManagedNameCell item={p} href={`/approval-policies/${encodeURIComponent(p.name)}`} />
                      <td data-label="Actions" className="mono">
                        {p.actions.join(", ")}
                      </td>
                      <td data-label="Selector" className="mono">
                        {p.selector}
                      </td>
                      <td data-label="Approvals">
                        {p.approvals_required}
                        {p.requester_may_approve ? " (requester may approve)" : ""}
                      </td>
                      <td data-label="Approvers" className="mono">
                        {p.approvers.join(", ")}
                      </td>
                      <td data-label="Expiry">{expiryText(p.expires_after_seconds)}</td>
                      <td data-label="Updated">
                        <Time value={p.updated_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableRegion>
          ) : (
            <EmptyState title="No approval policies.">
              Every action runs at once. {isAdmin ? "Add one with “Add policy”" : "An admin can add one"}{" "}
              (docs/approvals.md).
            </EmptyState>
          )}
        </QueryStatus>
      </Section>
    </Page>
  );
}
