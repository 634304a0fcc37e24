/**
 * Pending approvals (/agents/pending?status=rejected): why each agent waits (e.g. its join token was
 * revoked), name and approve agents one by one or in bulk, reject them, delete rejected records. Names are checked with the API's own rule as they are typed;
 * an API refusal (e.g. name_taken) is shown next to that row's field and the typed name is kept.
 */
import { Link } from "wouter";
import { ApiError } from "../api/client";
import { type Agent, useAllAgents } from "../api/agents";
import { pendingReasonText } from "../lib/agent-format";
import { agentNameError } from "../lib/rules";
import { useUrlState } from "../lib/url-state";
import { Banner, EmptyState, Field, fieldError, Page, ProblemMessage, QueryStatus, Time } from "../ui";
import "./pages.css";
import { type RowState, usePendingActions } from "./pending/use-pending-actions";

/** Refusals that are about the typed name: shown under the name field. */
const NAME_CODES = new Set(["invalid_name", "name_required", "name_taken", "name_immutable"]);

export default function PendingPage() {
  const [params, setParams] = useUrlState();
  const status = params.get("status") === "rejected" ? "rejected" : "pending";
  const list = useAllAgents("", status);
  const agents = list.data ?? [];

  const {
    names,
    setNames,
    selected,
    setSelected,
    rows,
    done,
    visible,
    chosen,
    approveOne,
    rejectOne,
    deleteOne,
    bulk,
  } = usePendingActions(agents);
  const allSelected = agents.length > 0 && chosen.length === agents.length;

  return (
    <Page title="Pending approvals">
      <div className="toolbar">
        <Field label="Status">
          <select
            value={status}
            onChange={(e) => setParams({ status: e.target.value === "rejected" ? "rejected" : undefined })}
          >
            <option value="pending">Pending</option>
            <option value="rejected">Rejected</option>
          </select>
        </Field>
        <button
          type="button"
          className="btn btn-primary"
          disabled={chosen.length === 0}
          onClick={() => void bulk(chosen, approveOne, "Approved")}
        >
          Approve selected
        </button>
        {status === "pending" ? (
          <button
            type="button"
            className="btn btn-danger"
            disabled={chosen.length === 0}
            onClick={() => void bulk(chosen, rejectOne, "Rejected")}
          >
            Reject selected
          </button>
        ) : null}
      </div>
      {done ? <Banner kind="success">{done}</Banner> : null}
      <QueryStatus query={list}>
        {agents.length === 0 ? (
          <EmptyState title={status === "pending" ? "No agents are waiting for approval." : "No rejected agents."}>
            New agents appear here when they first connect.
          </EmptyState>
        ) : (
          <div className="table-wrap">
            <table className="table cards">
              <thead>
                <tr>
                  <th scope="col">
                    <input
                      type="checkbox"
                      aria-label="Select all"
                      checked={allSelected}
                      onChange={(e) => setSelected(e.target.checked ? new Set(visible) : new Set())}
                    />
                  </th>
                  <th scope="col">Node ID</th>
                  <th scope="col">Name</th>
                  {status === "pending" ? <th scope="col">Reason</th> : null}
                  <th scope="col">Address</th>
                  <th scope="col">First seen</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {agents.map((a) => (
                  <PendingRow
                    key={a.node_id}
                    agent={a}
                    name={names[a.node_id] ?? ""}
                    onName={(v) => setNames((n) => ({ ...n, [a.node_id]: v }))}
                    selected={selected.has(a.node_id)}
                    onSelect={(on) =>
                      setSelected((s) => {
                        const next = new Set(s);
                        if (on) next.add(a.node_id);
                        else next.delete(a.node_id);
                        return next;
                      })
                    }
                    state={rows[a.node_id] ?? {}}
                    onApprove={() => void approveOne(a.node_id)}
                    onReject={status === "pending" ? () => void rejectOne(a.node_id) : undefined}
                    onDelete={status === "rejected" ? () => void deleteOne(a.node_id) : undefined}
                    showReason={status === "pending"}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryStatus>
    </Page>
  );
}

function PendingRow({
  agent,
  name,
  onName,
  selected,
  onSelect,
  state,
  onApprove,
  onReject,
  onDelete,
  showReason,
}: {
  agent: Agent;
  name: string;
  onName: (v: string) => void;
  selected: boolean;
  onSelect: (on: boolean) => void;
  state: RowState;
  onApprove: () => void;
  onReject: (() => void) | undefined;
  onDelete: (() => void) | undefined;
  showReason: boolean;
}) {
  const id = agent.node_id;
  // The rule as typed first; then what the API (or the submit check) said about the name.
  const apiNameError =
    fieldError(state.error, "name") ??
    (state.error instanceof ApiError && NAME_CODES.has(state.error.code) ? state.error.message : undefined);
  const nameProblem = agentNameError(name.trim()) ?? state.nameError ?? apiNameError;
  const otherError = state.error !== undefined && apiNameError === undefined;
  return (
    <tr>
      <td data-label="Select">
        <input
          type="checkbox"
          aria-label={`Select ${id}`}
          checked={selected}
          onChange={(e) => onSelect(e.target.checked)}
        />
      </td>
      <td className="mono" data-label="Node ID">
        <Link href={`/agents/${id}`}>{id}</Link>
      </td>
      <td data-label="Name">
        <Field
          label={<span className="visually-hidden">{`Name for ${id}`}</span>}
          error={nameProblem}
          className="pending-name"
        >
          <input
            type="text"
            value={name}
            placeholder="e.g. web-1"
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => onName(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter") onApprove();
            }}
          />
        </Field>
        {otherError ? (
          <div className="row-error">
            <ProblemMessage error={state.error} />
          </div>
        ) : null}
      </td>
      {showReason ? (
        <td data-label="Reason">
          <span data-testid="pending-reason">{pendingReasonText(agent.pending_reason)}</span>
          {agent.pending_reason ? (
            <>
              {" "}
              <code className="problem-code">{agent.pending_reason}</code>
            </>
          ) : null}
        </td>
      ) : null}
      <td className="mono" data-label="Address">
        {agent.address ?? ""}
      </td>
      <td data-label="First seen">
        <Time value={agent.first_seen} />
      </td>
      <td data-label="Actions">
        <div className="toolbar">
          <button type="button" className="btn btn-primary btn-small" disabled={state.busy} onClick={onApprove}>
            Approve
          </button>
          {onReject ? (
            <button type="button" className="btn btn-small" disabled={state.busy} onClick={onReject}>
              Reject
            </button>
          ) : null}
          {onDelete ? (
            <button type="button" className="btn btn-danger btn-small" disabled={state.busy} onClick={onDelete}>
              Delete
            </button>
          ) : null}
        </div>
      </td>
    </tr>
  );
}
