/**
 * One approval policy (/approval-policies/:name, admins): its form, saved with PUT, and "Delete"
 * (asks first). Requests already pending keep the approvers they were submitted with.
 */
import { useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import {
  type ApprovalPolicy,
  useApprovalPolicy,
  useDeleteApprovalPolicy,
  useSaveApprovalPolicy,
} from "../api/approvals";
import { useSession } from "../api/session";
import { Banner, DeleteWithConfirm, Page, QueryStatus, Section } from "../ui";
import { PolicyForm } from "./approval-policies/policy-form";
import { approvalsText } from "./parts/approval-rules";
import { ManagedByBanner, ownerOf } from "./sources/managed-by";
import "./pages.css";
import "./requests/requests.css";

export default function ApprovalPolicyPage() {
  const { name = "" } = useParams<{ name: string }>();
  const { isAdmin } = useSession();
  const [, navigate] = useLocation();
  const save = useSaveApprovalPolicy();
  const remove = useDeleteApprovalPolicy();
  const [saved, setSaved] = useState(false);
  const q = useApprovalPolicy(name);
  const p = q.data;
  // A policy a git source manages is changed in its repository: the API refuses edits and deletes.
  const owner = p ? ownerOf(p) : undefined;
  return (
    <Page
      title={`Approval policy ${name}`}
      actions={
        isAdmin && p && !owner ? (
          <DeleteWithConfirm
            mutation={remove}
            target={p.name}
            title={`Delete approval policy ${p.name}?`}
            onDeleted={() => navigate("/approval-policies")}
          >
            <p>The actions it holds run without approval from now on. Pending requests stay pending.</p>
          </DeleteWithConfirm>
        ) : null
      }
    >
      <p>
        <Link href="/approval-policies">← All approval policies</Link>
      </p>
      {saved ? <Banner kind="success">Saved.</Banner> : null}
      {owner ? <ManagedByBanner owner={owner} what="approval policy" /> : null}
      <QueryStatus query={q}>
        {p && owner ? <PolicyView policy={p} /> : null}
        {p && !owner ? (
          <Section title="Settings">
            <PolicyForm
              key={p.updated_at}
              policy={p}
              submitLabel="Save"
              pending={save.isPending}
              error={save.error}
              onSubmit={({ body }) =>
                save.mutate(
                  { name: p.name, body },
                  {
                    onSuccess: () => setSaved(true),
                  },
                )
              }
            />
          </Section>
        ) : null}
      </QueryStatus>
    </Page>
  );
}

/** A policy a git source manages, read-only: its settings as the repository's file gives them. */
function PolicyView({ policy: p }: { policy: ApprovalPolicy }) {
  return (
    <Section title="Settings">
      <dl className="props card" data-testid="policy-view">
        <dt>Description</dt>
        <dd>{p.description || "—"}</dd>
        <dt>Actions</dt>
        <dd className="mono">{p.actions.join(", ")}</dd>
        <dt>Selector</dt>
        <dd className="mono">{p.selector}</dd>
        <dt>Approvals</dt>
        <dd>
          {approvalsText(p)}
          {p.requester_may_approve ? " (the requester may approve)" : ""}
        </dd>
        <dt>Requests expire after</dt>
        <dd>{p.expires_after_seconds}s</dd>
        {p.actions.includes("access.request") ? (
          <>
            <dt>Longest access</dt>
            <dd>{p.max_access_seconds}s</dd>
          </>
        ) : null}
      </dl>
    </Section>
  );
}
