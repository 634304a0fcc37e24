/**
 * One approval policy (/approval-policies/:name, admins): its form, saved with PUT, and "Delete"
 * (asks first). Requests already pending keep the approvers they were submitted with.
 */
import { useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import { useApprovalPolicy, useDeleteApprovalPolicy, useSaveApprovalPolicy } from "../api/approvals";
import { useSession } from "../api/session";
import { Banner, DeleteWithConfirm, Page, QueryStatus, Section } from "../ui";
import { PolicyForm } from "./approval-policies/policy-form";
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
  return (
    <Page
      title={`Approval policy ${name}`}
      actions={
        isAdmin && p ? (
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
      <QueryStatus query={q}>
        {p ? (
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
