/**
 * The fields of an identity provider, for "Add provider" (name chosen here) and for "Edit" (name
 * fixed). The client secret is write-only: a password input that starts blank (blank keeps the stored
 * one), and "clear the stored secret" sends "". The mapping rules are rows, in order: first match wins.
 */
import { type FormEvent, type ReactNode, useState } from "react";
import { ApiError } from "../../api/client";
import type { IdentityProvider } from "../../api/sso";
import {
  buildProviderBody,
  emptyProviderFields,
  emptyRule,
  fieldsFromProvider,
  moveRule,
  type ProviderBody,
  type ProviderFields,
  type RuleFields,
  type RuleRole,
  removeRule,
  replaceRule,
} from "../../lib/identity-provider-form";
import { Field, fieldError, ProblemMessage } from "../../ui";

export interface ProviderSubmit {
  name: string;
  body: ProviderBody;
}

type Kit = {
  f: ProviderFields;
  set: (patch: Partial<ProviderFields>) => void;
  err: (field: string) => string | undefined;
};

const FIELDS = [
  "name",
  "display_name",
  "issuer",
  "client_id",
  "client_secret",
  "scopes",
  "groups_claim",
  "allowed_domains",
  "refresh_interval_seconds",
  "rules",
];

export function ProviderForm({
  provider,
  submitLabel,
  pending,
  error,
  onSubmit,
  extra,
}: {
  /** The provider being edited; none for a new one. */
  provider?: IdentityProvider;
  submitLabel: string;
  pending: boolean;
  error: unknown;
  onSubmit: (p: ProviderSubmit) => void;
  extra?: ReactNode;
}) {
  const editing = provider !== undefined;
  const [f, setF] = useState<ProviderFields>(() => (provider ? fieldsFromProvider(provider) : emptyProviderFields()));
  const [local, setLocal] = useState<{ field: string; message: string } | undefined>();
  const set = (patch: Partial<ProviderFields>) => setF((old) => ({ ...old, ...patch }));
  const err = (field: string) => {
    if (local?.field === field) return local.message;
    // Discovery failures name the issuer field; show the server's detail right there.
    if (field === "issuer" && error instanceof ApiError && error.code === "issuer_discovery_failed")
      return error.problem.detail;
    return fieldError(error, field);
  };
  const shownNear = FIELDS.map(err).find(Boolean);

  function submit(e: FormEvent) {
    e.preventDefault();
    const built = buildProviderBody(f, editing);
    if (!built.ok) {
      setLocal({ field: built.field, message: built.message });
      return;
    }
    setLocal(undefined);
    onSubmit({ name: editing ? provider.name : f.name.trim(), body: built.body });
  }

  const kit: Kit = { f, set, err };
  return (
    <form
      className="stack card"
      onSubmit={submit}
      aria-label={editing ? "Edit identity provider" : "New identity provider"}
      autoComplete="off"
    >
      <SettingsFields {...kit} editing={editing} />
      <SecretFields {...kit} editing={editing} hasSecret={provider?.has_client_secret ?? false} />
      <RulesEditor {...kit} />
      <label className="check">
        <input type="checkbox" checked={f.enabled} onChange={(e) => set({ enabled: e.target.checked })} />
        Enabled (offered on the sign-in page)
      </label>
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

const text = (value: string, onChange: (v: string) => void, extra: { placeholder?: string; type?: string } = {}) => (
  <input
    type={extra.type ?? "text"}
    value={value}
    placeholder={extra.placeholder}
    autoComplete="off"
    spellCheck={false}
    onChange={(e) => onChange(e.target.value)}
  />
);

function SettingsFields({ f, set, err, editing }: Kit & { editing: boolean }) {
  return (
    <>
      <div className="grid">
        <Field label="Name" error={err("name")} hint={editing ? "fixed" : "used in URLs; cannot be changed later"}>
          <input
            type="text"
            value={f.name}
            readOnly={editing}
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => set({ name: e.target.value })}
          />
        </Field>
        <Field label="Display name" error={err("display_name")} hint={'the button says "Sign in with …"'}>
          {text(f.displayName, (v) => set({ displayName: v }), { placeholder: f.name || undefined })}
        </Field>
      </div>
      <div className="grid">
        <Field label="Issuer" error={err("issuer")} hint="its /.well-known/openid-configuration is read on save">
          {text(f.issuer, (v) => set({ issuer: v }), { placeholder: "https://idp.example.com", type: "url" })}
        </Field>
        <Field label="Client id" error={err("client_id")}>
          {text(f.clientId, (v) => set({ clientId: v }))}
        </Field>
      </div>
      <div className="grid">
        <Field label="Scopes" error={err("scopes")} hint="comma or space separated">
          {text(f.scopes, (v) => set({ scopes: v }))}
        </Field>
        <Field label="Groups claim" error={err("groups_claim")}>
          {text(f.groupsClaim, (v) => set({ groupsClaim: v }), { placeholder: "groups" })}
        </Field>
        <Field label="Allowed domains" error={err("allowed_domains")} hint="comma separated; empty = any">
          {text(f.allowedDomains, (v) => set({ allowedDomains: v }))}
        </Field>
        <Field
          label="Refresh interval (seconds)"
          error={err("refresh_interval_seconds")}
          hint="blank or 0 = the default (300)"
        >
          {text(f.refreshIntervalSeconds, (v) => set({ refreshIntervalSeconds: v }), { type: "number" })}
        </Field>
      </div>
    </>
  );
}

function SecretFields({ f, set, err, editing, hasSecret }: Kit & { editing: boolean; hasSecret: boolean }) {
  const hint = !editing
    ? "write-only; leave blank for a public client"
    : hasSecret
      ? "a secret is stored (never shown) — leave blank to keep it"
      : "none stored — leave blank for a public client";
  return (
    <div className="grid">
      <Field label="Client secret" error={err("client_secret")} hint={hint}>
        <input
          type="password"
          value={f.clientSecret}
          autoComplete="new-password"
          disabled={f.clearSecret}
          onChange={(e) => set({ clientSecret: e.target.value })}
        />
      </Field>
      {editing && hasSecret ? (
        <label className="check">
          <input
            type="checkbox"
            checked={f.clearSecret}
            onChange={(e) => set({ clearSecret: e.target.checked, clientSecret: "" })}
          />
          Clear the stored secret
        </label>
      ) : null}
    </div>
  );
}

function RulesEditor({ f, set, err }: Kit) {
  const setRules = (rules: RuleFields[]) => set({ rules });
  return (
    <fieldset className="stack">
      <legend>Mapping rules</legend>
      <p className="muted">
        Checked in order, top to bottom: the first rule that matches decides the role and agent scope. No rule = nobody
        may sign in. Lists are comma separated; an empty condition matches anyone.
      </p>
      {err("rules") ? (
        <div className="field-error" role="alert">
          {err("rules")}
        </div>
      ) : null}
      {f.rules.map((r, i) => (
        <RuleRow
          // biome-ignore lint/suspicious/noArrayIndexKey: a rule's position is its identity.
          key={i}
          rule={r}
          index={i}
          count={f.rules.length}
          err={err}
          onChange={(patch) => setRules(replaceRule(f.rules, i, patch))}
          onMove={(delta) => setRules(moveRule(f.rules, i, delta))}
          onRemove={() => setRules(removeRule(f.rules, i))}
        />
      ))}
      <div className="toolbar">
        <button type="button" className="btn" onClick={() => setRules([...f.rules, emptyRule()])}>
          Add rule
        </button>
      </div>
    </fieldset>
  );
}

function RuleRow({
  rule,
  index,
  count,
  err,
  onChange,
  onMove,
  onRemove,
}: {
  rule: RuleFields;
  index: number;
  count: number;
  err: (field: string) => string | undefined;
  onChange: (patch: Partial<RuleFields>) => void;
  onMove: (delta: number) => void;
  onRemove: () => void;
}) {
  const n = `rule ${index + 1}`;
  const e = (k: string) => err(`rules.${index}.${k}`);
  return (
    <fieldset className="card stack">
      <legend>
        Rule {index + 1}
        {index === 0 ? " (checked first)" : ""}
      </legend>
      <div className="grid">
        <Field label="Rule name" error={e("name")}>
          {text(rule.name, (v) => onChange({ name: v }), { placeholder: `rule ${index}` })}
        </Field>
        <Field label="Groups" error={e("groups")} hint="any of these">
          {text(rule.groups, (v) => onChange({ groups: v }))}
        </Field>
        <Field label="Email" error={e("email")} hint="exact or glob, *@example.com">
          {text(rule.email, (v) => onChange({ email: v }))}
        </Field>
        <Field label="Domains" error={e("domains")}>
          {text(rule.domains, (v) => onChange({ domains: v }))}
        </Field>
        <Field label="Role" error={e("role")}>
          <select value={rule.role} onChange={(ev) => onChange({ role: ev.target.value as RuleRole })}>
            <option value="operator">operator</option>
            <option value="admin">admin</option>
          </select>
        </Field>
        <Field
          label="Agent selector"
          error={e("agent_selector")}
          hint={rule.role === "admin" ? "admins are never scoped" : "blank = all agents"}
        >
          <input
            type="text"
            value={rule.role === "admin" ? "" : rule.agentSelector}
            disabled={rule.role === "admin"}
            placeholder={rule.role === "admin" ? undefined : "env=prod"}
            autoComplete="off"
            spellCheck={false}
            onChange={(ev) => onChange({ agentSelector: ev.target.value })}
          />
        </Field>
      </div>
      <div className="toolbar">
        <button type="button" className="btn btn-small" disabled={index === 0} onClick={() => onMove(-1)}>
          Move {n} up
        </button>
        <button type="button" className="btn btn-small" disabled={index === count - 1} onClick={() => onMove(1)}>
          Move {n} down
        </button>
        <button type="button" className="btn btn-small btn-danger" onClick={onRemove}>
          Remove {n}
        </button>
      </div>
    </fieldset>
  );
}
