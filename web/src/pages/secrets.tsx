/**
 * Secrets (/secrets?new=1&cursor=): metadata only — the API never returns a value and this page never
 * keeps one (see secrets/new-secret-form.tsx). Operators and admins create and delete; the secrets
 * service decides who may widen a restriction. When an approval policy holds secret writes
 * (ApprovalBanner), a create or delete answers 202 and the notice links to its change request.
 */
import { type ReactNode, useRef, useState } from "react";
import { Link } from "wouter";
import { type Agent, useAllAgents } from "../api/agents";
import { type HeldSecretWrite, type SecretMeta, useCreateSecret, useDeleteSecret, useSecrets } from "../api/secrets";
import { useUrlState } from "../lib/url-state";
import { Badge, DeleteWithConfirm, EmptyState, Page, ProblemMessage, QueryStatus, Section, Time } from "../ui";
import "./pages.css";
import { ApprovalBanner } from "./parts/approval-banner";
import { PagedTable } from "./parts/item-table";
import { agentLabel } from "./secrets/agent-picker";
import { NewSecretForm } from "./secrets/new-secret-form";
import "./secrets/secrets.css";

/** "update secret db held for approval: change request 01J…" with the request linked. */
function heldNotice(h: HeldSecretWrite): ReactNode {
  return (
    <span data-testid="secret-held">
      {h.summary} held for approval: change request{" "}
      <Link href={`/requests/${encodeURIComponent(h.change_request_id)}`}>{h.change_request_id}</Link>
    </span>
  );
}

export default function SecretsPage() {
  const [params, setParams] = useUrlState();
  const cursor = params.get("cursor") ?? undefined;
  const creating = params.get("new") === "1";
  const list = useSecrets(cursor);
  const fleet = useAllAgents("", "", { poll: false });
  const agents = fleet.data ?? [];
  const creator = useCreateSecret();
  // A held delete is heard of (hook's onSuccess) before the row's onDeleted runs, which shows it.
  const heldDelete = useRef<HeldSecretWrite | undefined>(undefined);
  const remove = useDeleteSecret((h) => {
    heldDelete.current = h;
  });
  const [notice, setNotice] = useState<ReactNode>();
  const secrets = list.data?.secrets ?? [];

  return (
    <Page
      title="Secrets"
      actions={
        creating ? null : (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              creator.reset();
              setNotice(undefined);
              setParams({ new: "1" });
            }}
          >
            New secret
          </button>
        )
      }
    >
      {creating ? (
        <NewSecretForm
          agents={agents}
          creator={creator}
          onCreated={(r) => {
            setNotice("held" in r ? heldNotice(r.held) : `Created secret ${r.name}.`);
            setParams({ new: undefined }, { replace: true });
          }}
          onCancel={() => setParams({ new: undefined })}
        />
      ) : null}
      <ApprovalBanner action="secret.write" />
      {notice ? (
        <p role="status" className="muted">
          {notice}
        </p>
      ) : null}
      <Section title="All secrets">
        <QueryStatus query={list}>
          <PagedTable
            label="Secrets"
            columns={["Name", "Description", "Restriction", "Expires", "Updated", "Actions"]}
            items={secrets}
            empty={<EmptyState title="No secrets yet.">Modules read them as {"{{ secrets.NAME }}"}.</EmptyState>}
            cursor={cursor}
            nextCursor={list.data?.has_more ? list.data.next_cursor : undefined}
            onCursor={(c) => setParams({ cursor: c })}
          >
            {(s) => (
              <tr key={s.name}>
                <td className="mono">{s.name}</td>
                <td>{s.description ?? <span className="muted">—</span>}</td>
                <td>
                  <Restriction restriction={s.restriction} agents={agents} />
                </td>
                <td>
                  {s.expires_at ? (
                    <>
                      <Time value={s.expires_at} />
                      {Date.parse(s.expires_at) <= Date.now() ? <Badge tone="danger">expired</Badge> : null}
                    </>
                  ) : (
                    <span className="muted">never</span>
                  )}
                </td>
                <td>
                  <Time value={s.updated_at} />
                  <span className="muted"> by {s.updated_by}</span>
                </td>
                <td>
                  <DeleteWithConfirm
                    mutation={remove}
                    target={s.name}
                    title={`Delete secret ${s.name}?`}
                    small
                    tooltip={`Delete ${s.name}`}
                    showProblem={false}
                    onDeleted={() => {
                      const h = heldDelete.current;
                      heldDelete.current = undefined;
                      setNotice(h ? heldNotice(h) : `Deleted secret ${s.name}.`);
                    }}
                  >
                    <p>Modules that use it fail their next plan or apply. This cannot be undone.</p>
                  </DeleteWithConfirm>
                </td>
              </tr>
            )}
          </PagedTable>
        </QueryStatus>
        {remove.error ? <ProblemMessage error={remove.error} /> : null}
      </Section>
    </Page>
  );
}

/** Who may receive the secret: picked agents by name (node id as tooltip) and required tags. */
function Restriction({ restriction, agents }: { restriction: SecretMeta["restriction"]; agents: Agent[] }) {
  if (!restriction || (restriction.node_ids.length === 0 && Object.keys(restriction.tags).length === 0)) {
    return <span className="muted">any approved agent</span>;
  }
  const byId = new Map(agents.map((a) => [a.node_id, a]));
  return (
    <ul className="restriction-list" aria-label="Restriction">
      {restriction.node_ids.map((id) => {
        const a = byId.get(id);
        return (
          <li key={id} className="chip" title={id}>
            {a ? agentLabel(a) : <span className="mono">{id}</span>}
          </li>
        );
      })}
      {Object.entries(restriction.tags).map(([k, v]) => (
        <li key={`tag:${k}`} className="chip mono">
          {k}={v}
        </li>
      ))}
    </ul>
  );
}
