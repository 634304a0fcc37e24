/**
 * Assignments (/assignments?q=): which modules are kept on which agents (a selector). Operators and
 * admins both create, edit and delete them (the API allows operators); a name filter lives in the URL.
 */
import { useState } from "react";
import { Link } from "wouter";
import { type Assignment, useAssignments, useDeleteAssignment } from "../api/assignments";
import { useUrlState } from "../lib/url-state";
import { ConfirmDialog, EmptyState, Field, Page, ProblemMessage, QueryStatus, Time } from "../ui";
import "./pages.css";
import { TableRegion } from "./parts/table-region";

export default function AssignmentsPage() {
  const [params, setParams] = useUrlState();
  const q = params.get("q") ?? "";
  const list = useAssignments();
  const remove = useDeleteAssignment();
  const [confirming, setConfirming] = useState<Assignment | undefined>();
  const all = list.data ?? [];
  const needle = q.trim().toLowerCase();
  const shown = needle
    ? all.filter(
        (a) =>
          a.name.includes(needle) ||
          a.selector.toLowerCase().includes(needle) ||
          a.modules.some((m) => m.includes(needle)),
      )
    : all;

  return (
    <Page
      title="Assignments"
      actions={
        <Link href="/assignments/new" className="btn btn-primary">
          New assignment
        </Link>
      }
    >
      <div className="toolbar">
        <Field label="Filter">
          <input
            type="search"
            value={q}
            placeholder="name, selector or module"
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => setParams({ q: e.target.value }, { replace: true })}
          />
        </Field>
      </div>
      {remove.error ? <ProblemMessage error={remove.error} /> : null}
      <QueryStatus query={list}>
        {shown.length === 0 ? (
          <EmptyState title={all.length === 0 ? "No assignments yet." : "No assignment matches the filter."}>
            {all.length === 0 ? "An assignment keeps modules on the agents its selector matches." : null}
          </EmptyState>
        ) : (
          <TableRegion label="Assignments">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Selector</th>
                  <th scope="col">Modules</th>
                  <th scope="col">Description</th>
                  <th scope="col">Created</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((a) => (
                  <tr key={a.name}>
                    <td>
                      <Link href={`/assignments/${encodeURIComponent(a.name)}`}>{a.name}</Link>
                    </td>
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
                      <div className="toolbar">
                        <Link
                          href={`/assignments/${encodeURIComponent(a.name)}/edit`}
                          className="btn btn-small"
                          aria-label={`Edit ${a.name}`}
                        >
                          Edit
                        </Link>
                        <button
                          type="button"
                          className="btn btn-danger btn-small"
                          aria-label={`Delete ${a.name}`}
                          onClick={() => {
                            remove.reset();
                            setConfirming(a);
                          }}
                        >
                          Delete
                        </button>
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
      </QueryStatus>
      <ConfirmDialog
        open={confirming !== undefined}
        title={`Delete assignment ${confirming?.name ?? ""}?`}
        confirmLabel="Delete"
        onClose={() => setConfirming(undefined)}
        onConfirm={() => {
          if (confirming) remove.mutate(confirming.name);
          setConfirming(undefined);
        }}
      >
        <p>Agents keep what was applied; its modules are no longer applied to them by this assignment.</p>
      </ConfirmDialog>
    </Page>
  );
}
