/**
 * The approval policy form (create and edit): name, actions (the closed list), selector, approvals
 * required, approvers one per line, whether the requester may approve, and the expiry in hours. The
 * API validates (invalid_approval_policy with `field`, unknown_approver); its messages show by field.
 */
import { type FormEvent, type ReactNode, useState } from "react";
import type { ApprovalPolicy, ApprovalPolicyPut } from "../../api/approvals";
import { ApiError } from "../../api/client";
import { Field, fieldError, ProblemMessage } from "../../ui";
// The closed list, from its one source file: the package's root entry would bring node-only modules
// (and ~75 kB) into the page, and @orch/contracts has no subpath export for it yet.
import { APPROVAL_ACTIONS } from "../../../../packages/contracts/src/approval-actions";

interface FormState {
  name: string;
  description: string;
  actions: string[];
  selector: string;
  approvalsRequired: string;
  approvers: string;
  requesterMayApprove: boolean;
  expiryHours: string;
  maxAccessHours: string;
}

const initial = (p?: ApprovalPolicy): FormState => ({
  name: p?.name ?? "",
  description: p?.description ?? "",
  actions: p?.actions ?? ["assignment.apply"],
  selector: p?.selector ?? "*",
  approvalsRequired: String(p?.approvals_required ?? 1),
  approvers: (p?.approvers ?? ["role:admin"]).join("\n"),
  requesterMayApprove: p?.requester_may_approve ?? false,
  expiryHours: String((p?.expires_after_seconds ?? 86400) / 3600),
  maxAccessHours: String((p?.max_access_seconds ?? 28800) / 3600),
});

const toBody = (f: FormState): ApprovalPolicyPut => ({
  description: f.description,
  actions: f.actions,
  selector: f.selector.trim() || "*",
  approvals_required: Number(f.approvalsRequired),
  approvers: f.approvers
    .split("\n")
    .map((s) => s.trim())
    .filter(Boolean),
  requester_may_approve: f.requesterMayApprove,
  expires_after_seconds: Math.round(Number(f.expiryHours) * 3600),
  max_access_seconds: Math.round(Number(f.maxAccessHours) * 3600),
});

/** A duration in hours (fractions allowed: 0.25 = 15 minutes). */
function HoursField(p: {
  label: string;
  hint: string;
  error: string | undefined;
  value: string;
  onChange: (v: string) => void;
}) {
  return (
    <Field label={p.label} hint={p.hint} error={p.error}>
      <input
        type="number"
        className="policy-number"
        min={1 / 60}
        step="any"
        value={p.value}
        onChange={(e) => p.onChange(e.target.value)}
      />
    </Field>
  );
}

/** The closed list of actions as checkboxes. */
function ActionsField({
  actions,
  onChange,
  error,
}: {
  actions: string[];
  onChange: (actions: string[]) => void;
  error: string | undefined;
}) {
  return (
    <fieldset className="policy-actions">
      <legend>Actions held for approval</legend>
      {APPROVAL_ACTIONS.map((a) => (
        <label className="check" key={a}>
          <input
            type="checkbox"
            checked={actions.includes(a)}
            onChange={(e) => onChange(e.target.checked ? [...actions, a] : actions.filter((x) => x !== a))}
          />
          <span className="mono">{a}</span>
        </label>
      ))}
      {error ? <p className="field-error">{error}</p> : null}
    </fieldset>
  );
}

export function PolicyForm({
  policy,
  submitLabel,
  pending,
  error,
  onSubmit,
  extra,
}: {
  policy?: ApprovalPolicy;
  submitLabel: string;
  pending: boolean;
  error: unknown;
  onSubmit: (v: { name: string; body: ApprovalPolicyPut }) => void;
  extra?: ReactNode;
}) {
  const [f, setF] = useState<FormState>(() => initial(policy));
  const set = (u: Partial<FormState>) => setF((prev) => ({ ...prev, ...u }));
  const editing = policy !== undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit({ name: f.name.trim(), body: toBody(f) });
  };
  // The auth service names the field a refusal is about at the problem's top level (`field`).
  const err = (field: string) =>
    fieldError(error, field) ??
    (error instanceof ApiError && error.problem.field === field ? error.problem.detail : undefined);
  const shownNear = [
    "actions",
    "selector",
    "approvals_required",
    "approvers",
    "expires_after_seconds",
    "max_access_seconds",
  ].some(err);
  return (
    <form
      className="stack card"
      onSubmit={submit}
      aria-label={editing ? "Edit approval policy" : "New approval policy"}
    >
      {editing ? null : (
        <Field label="Name" error={err("name")}>
          <input
            value={f.name}
            required
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => set({ name: e.target.value })}
          />
        </Field>
      )}
      <Field label="Description">
        <input value={f.description} onChange={(e) => set({ description: e.target.value })} />
      </Field>
      <ActionsField actions={f.actions} onChange={(actions) => set({ actions })} error={err("actions")} />
      <Field label="Selector" hint="agents it covers, e.g. env=prod; * = every agent" error={err("selector")}>
        <input value={f.selector} spellCheck={false} onChange={(e) => set({ selector: e.target.value })} />
      </Field>
      <Field label="Approvals required" hint="1 to 10" error={err("approvals_required")}>
        <input
          type="number"
          className="policy-number"
          min={1}
          max={10}
          value={f.approvalsRequired}
          onChange={(e) => set({ approvalsRequired: e.target.value })}
        />
      </Field>
      <Field
        label="Approvers"
        hint="one per line: operator:<name>, role:admin, role:operator or group:<sso group>"
        error={err("approvers")}
      >
        <textarea
          rows={3}
          value={f.approvers}
          spellCheck={false}
          onChange={(e) => set({ approvers: e.target.value })}
        />
      </Field>
      <label className="check">
        <input
          type="checkbox"
          checked={f.requesterMayApprove}
          onChange={(e) => set({ requesterMayApprove: e.target.checked })}
        />
        The requester may approve their own request
      </label>
      <HoursField
        label="Expires after (hours)"
        hint="a pending request expires after this long"
        error={err("expires_after_seconds")}
        value={f.expiryHours}
        onChange={(expiryHours) => set({ expiryHours })}
      />
      {f.actions.includes("access.request") ? (
        <HoursField
          label="Longest access (hours)"
          hint="an access request may ask for at most this long"
          error={err("max_access_seconds")}
          value={f.maxAccessHours}
          onChange={(maxAccessHours) => set({ maxAccessHours })}
        />
      ) : null}
      <div className="toolbar">
        <button type="submit" className="btn btn-primary" disabled={pending}>
          {pending ? "Saving…" : submitLabel}
        </button>
        {extra}
      </div>
      {error && !shownNear ? <ProblemMessage error={error} /> : null}
    </form>
  );
}
