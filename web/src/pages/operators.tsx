/**
 * Operators (/operators?cursor=): everyone sees the list; admins also get "Add operator" and a
 * "Remove" per row (asked first). The API decides in the end; hiding the controls only spares
 * non-admins a 403.
 */
import { type FormEvent, useState } from "react";
import { Link } from "wouter";
import { ApiError } from "../api/client";
import { useAddOperator, useOperators, useRemoveOperator } from "../api/operators";
import { useSession } from "../api/session";
import { operatorNameError } from "../lib/rules";
import { checkSelector } from "../lib/selector";
import { operatorSource } from "../lib/sso";
import { useUrlState } from "../lib/url-state";
import {
  Badge,
  DeleteWithConfirm,
  EmptyState,
  Field,
  fieldError,
  Page,
  ProblemMessage,
  QueryStatus,
  Section,
  Time,
} from "../ui";
import "./pages.css";
import { PagedTable } from "./parts/item-table";

export default function OperatorsPage() {
  const { isAdmin, operator: me } = useSession();
  const [params, setParams] = useUrlState();
  const cursor = params.get("cursor") ?? undefined;
  const list = useOperators(cursor);
  const remove = useRemoveOperator();
  const operators = list.data?.operators ?? [];
  // Shown once the API says where operators come from (a key, or single sign-on and its rule).
  const withSource = operators.some((o) => operatorSource(o) !== undefined);

  return (
    <Page title="Operators">
      {isAdmin ? <AddOperatorForm /> : null}
      {isAdmin ? (
        <p className="muted">
          Operators who sign in with single sign-on are created by their provider's mapping rules:{" "}
          <Link href="/identity-providers">Identity providers</Link>.
        </p>
      ) : null}
      <Section title="All operators">
        <QueryStatus query={list}>
          <PagedTable
            label="Operators"
            columns={["Name", "Role", "Scope", withSource && "Source", "Created", "Public key", isAdmin && "Actions"]}
            items={operators}
            empty={<EmptyState title="No operators." />}
            cursor={cursor}
            nextCursor={list.data?.has_more ? list.data.next_cursor : undefined}
            onCursor={(c) => setParams({ cursor: c })}
          >
            {(o) => (
              <tr key={o.id}>
                <td>
                  {o.name}
                  {o.id === me.id ? <span className="muted"> (you)</span> : null}
                  {!o.active ? <Badge tone="neutral">inactive</Badge> : null}
                </td>
                <td>
                  <Badge tone={o.role === "admin" ? "info" : "neutral"}>{o.role}</Badge>
                </td>
                <td className="mono">{o.agent_selector ?? <span className="muted">all agents</span>}</td>
                {withSource ? <td>{operatorSource(o) ?? <span className="muted">—</span>}</td> : null}
                <td>
                  <Time value={o.created_at} />
                  {o.created_by ? <span className="muted"> by {o.created_by}</span> : null}
                </td>
                <td className="mono truncate" title={o.public_key} style={{ maxWidth: "14rem" }}>
                  {o.public_key}
                </td>
                {isAdmin ? (
                  <td>
                    <DeleteWithConfirm
                      mutation={remove}
                      target={o.id}
                      title={`Remove operator ${o.name}?`}
                      label="Remove"
                      small
                      tooltip={`Remove ${o.name}`}
                      showProblem={false}
                    >
                      <p>Their tokens and console sessions are revoked at once. This cannot be undone.</p>
                    </DeleteWithConfirm>
                  </td>
                ) : null}
              </tr>
            )}
          </PagedTable>
        </QueryStatus>
        {remove.error ? <ProblemMessage error={remove.error} /> : null}
      </Section>
    </Page>
  );
}

function AddOperatorForm() {
  const [name, setName] = useState("");
  const [publicKey, setPublicKey] = useState("");
  const [role, setRole] = useState<"operator" | "admin">("operator");
  const [scope, setScope] = useState("");
  const [added, setAdded] = useState<string | undefined>();
  const add = useAddOperator();
  const scopeCheck = checkSelector(scope);
  const nameError = operatorNameError(name.trim()) ?? fieldError(add.error, "name");
  const keyError =
    fieldError(add.error, "public_key") ?? codeError(add.error, ["invalid_public_key", "public_key_in_use"]);
  const scopeError =
    (scopeCheck.ok ? undefined : scopeCheck.message) ??
    fieldError(add.error, "agent_selector") ??
    codeError(add.error, ["invalid_selector", "admin_cannot_be_scoped"]);
  const shownNear = nameError ?? keyError ?? scopeError ?? codeError(add.error, ["operator_exists"]);
  const otherError = add.error && !shownNear;

  function submit(e: FormEvent) {
    e.preventDefault();
    setAdded(undefined);
    if (!name.trim() || operatorNameError(name.trim()) || !scopeCheck.ok) return;
    add.mutate(
      {
        name: name.trim(),
        public_key: publicKey.trim(),
        role,
        ...(scopeCheck.selector ? { agent_selector: scopeCheck.selector } : {}),
      },
      {
        onSuccess: (o) => {
          setAdded(o.name);
          setName("");
          setPublicKey("");
          setScope("");
          setRole("operator");
        },
      },
    );
  }

  return (
    <Section title="Add operator">
      <form className="stack card" onSubmit={submit} aria-label="Add operator">
        <div className="grid">
          <Field label="Name" error={nameError ?? codeError(add.error, ["operator_exists"])}>
            <input
              type="text"
              value={name}
              autoComplete="off"
              spellCheck={false}
              onChange={(e) => setName(e.target.value)}
            />
          </Field>
          <Field label="Role">
            <select value={role} onChange={(e) => setRole(e.target.value === "admin" ? "admin" : "operator")}>
              <option value="operator">operator</option>
              <option value="admin">admin</option>
            </select>
          </Field>
          <Field label="Agent scope" hint="optional selector, operators only (e.g. env=staging)" error={scopeError}>
            <input
              type="text"
              className="mono"
              value={scope}
              autoComplete="off"
              spellCheck={false}
              onChange={(e) => setScope(e.target.value)}
            />
          </Field>
        </div>
        <Field label="Public key" hint="the operator's Ed25519 public key (orchctl keygen prints it)" error={keyError}>
          <input
            type="text"
            className="mono"
            value={publicKey}
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => setPublicKey(e.target.value)}
          />
        </Field>
        <div className="toolbar">
          <button type="submit" className="btn btn-primary" disabled={add.isPending}>
            Add operator
          </button>
          {added ? (
            <span role="status" className="muted">
              Added {added}.
            </span>
          ) : null}
        </div>
        {otherError ? <ProblemMessage error={add.error} /> : null}
      </form>
    </Section>
  );
}

/** The API's detail when its code is one of these (errors about a field that carry no `errors[]`). */
function codeError(error: unknown, codes: string[]): string | undefined {
  if (!(error instanceof ApiError) || !codes.includes(error.code)) return undefined;
  return `${error.problem.detail} (${error.code})`;
}
