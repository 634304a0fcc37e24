/**
 * The fields of a channel, for "New channel" (type chosen here) and for editing (type fixed). On an
 * edit the credential fields start blank with the stored value's mask as placeholder: blank keeps it.
 */
import { type FormEvent, type ReactNode, useState } from "react";
import type { Channel, ChannelType } from "../../api/channels";
import { ApiError } from "../../api/client";
import { Field, fieldError, ProblemMessage } from "../../ui";
import { buildConfig, CHANNEL_TYPES, type ChannelFields, emptyFields, fieldsFrom, SEVERITIES } from "./channel-config";

export interface ChannelSubmit {
  name: string;
  channel_type: ChannelType;
  config: Record<string, unknown>;
  enabled: boolean;
}

export function ChannelForm({
  channel,
  submitLabel,
  pending,
  error,
  onSubmit,
  extra,
}: {
  /** The channel being edited; none for a new one. */
  channel?: Channel;
  submitLabel: string;
  pending: boolean;
  error: unknown;
  onSubmit: (c: ChannelSubmit) => void;
  extra?: ReactNode;
}) {
  const editing = channel !== undefined;
  const [type, setType] = useState<ChannelType>(channel?.channel_type ?? "webhook");
  const [name, setName] = useState(channel?.name ?? "");
  const [enabled, setEnabled] = useState(channel?.enabled ?? true);
  const [f, setF] = useState<ChannelFields>(() => (channel ? fieldsFrom(channel.config) : emptyFields()));
  const [local, setLocal] = useState<{ field: string; message: string } | undefined>();
  const set = (patch: Partial<ChannelFields>) => setF((old) => ({ ...old, ...patch }));
  const stored = (key: string): string | undefined => {
    const v = channel?.config[key];
    if (v === undefined || v === null) return undefined;
    return typeof v === "object" ? Object.keys(v).join(", ") : String(v);
  };
  const keepHint = (key: string, what: string) =>
    editing && stored(key) !== undefined ? `stored: ${stored(key)} — leave blank to keep it` : what;
  const err = (field: string) =>
    (local?.field === field ? local.message : undefined) ?? fieldError(error, `config.${field}`);
  const nameError =
    fieldError(error, "name") ??
    (error instanceof ApiError && error.code === "channel_exists" ? error.problem.detail : undefined);
  const shownNear =
    nameError ??
    [
      "url",
      "webhook_url",
      "secret",
      "headers",
      "server_url",
      "topic",
      "token",
      "priority",
      "min_severity",
      "event_types",
    ]
      .map(err)
      .find(Boolean);

  function submit(e: FormEvent) {
    e.preventDefault();
    const built = buildConfig(type, f, editing);
    if (!built.ok) {
      setLocal({ field: built.field, message: built.message });
      return;
    }
    setLocal(undefined);
    onSubmit({ name: name.trim(), channel_type: type, config: built.config, enabled });
  }

  return (
    <form
      className="stack card"
      onSubmit={submit}
      aria-label={editing ? "Edit channel" : "New channel"}
      autoComplete="off"
    >
      <div className="grid">
        <Field label="Name" error={nameError}>
          <input
            type="text"
            value={name}
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => setName(e.target.value)}
          />
        </Field>
        {editing ? (
          <Field label="Type">
            <input type="text" value={type} readOnly />
          </Field>
        ) : (
          <Field label="Type">
            <select value={type} onChange={(e) => setType(e.target.value as ChannelType)}>
              {CHANNEL_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </Field>
        )}
      </div>
      {type === "webhook" ? (
        <>
          <Field label="URL" error={err("url")} hint="the receiver; POSTed the audit event as JSON">
            <input
              type="url"
              className="mono"
              value={f.url}
              spellCheck={false}
              onChange={(e) => set({ url: e.target.value })}
            />
          </Field>
          <div className="grid">
            <Field
              label="Signing secret"
              error={err("secret")}
              hint={keepHint("secret", "optional whsec_…; left blank, one is generated and shown once")}
            >
              <input
                type="password"
                className="mono"
                value={f.secret}
                autoComplete="off"
                disabled={f.rotateSecret}
                placeholder={editing ? stored("secret") : undefined}
                onChange={(e) => set({ secret: e.target.value })}
              />
            </Field>
            {editing ? (
              <label className="check">
                <input
                  type="checkbox"
                  checked={f.rotateSecret}
                  onChange={(e) => set({ rotateSecret: e.target.checked })}
                />
                Generate a new signing secret
              </label>
            ) : null}
          </div>
          <Field
            label="Headers"
            error={err("headers")}
            hint={keepHint("headers", "optional, one “Name: value” per line")}
          >
            <textarea
              className="mono"
              rows={2}
              value={f.headers}
              spellCheck={false}
              onChange={(e) => set({ headers: e.target.value })}
            />
          </Field>
        </>
      ) : null}
      {type === "discord" || type === "slack" ? (
        <Field
          label="Webhook URL"
          error={err("webhook_url")}
          hint={keepHint("webhook_url", "it carries the credential: stored encrypted, shown masked")}
        >
          <input
            type="password"
            className="mono"
            value={f.webhookUrl}
            autoComplete="off"
            placeholder={editing ? stored("webhook_url") : undefined}
            onChange={(e) => set({ webhookUrl: e.target.value })}
          />
        </Field>
      ) : null}
      {type === "ntfy" ? (
        <div className="grid">
          <Field label="Server URL" error={err("server_url")} hint="default https://ntfy.sh">
            <input
              type="url"
              className="mono"
              value={f.serverUrl}
              onChange={(e) => set({ serverUrl: e.target.value })}
            />
          </Field>
          <Field label="Topic" error={err("topic")}>
            <input type="text" className="mono" value={f.topic} onChange={(e) => set({ topic: e.target.value })} />
          </Field>
          <Field label="Token" error={err("token")} hint={keepHint("token", "optional access token")}>
            <input
              type="password"
              className="mono"
              value={f.token}
              autoComplete="off"
              placeholder={editing ? stored("token") : undefined}
              onChange={(e) => set({ token: e.target.value })}
            />
          </Field>
          <Field label="Priority" error={err("priority")} hint="1-5; default by severity">
            <input
              type="number"
              min={1}
              max={5}
              value={f.priority}
              onChange={(e) => set({ priority: e.target.value })}
            />
          </Field>
        </div>
      ) : null}
      <div className="grid">
        <Field label="Minimum severity" error={err("min_severity")}>
          <select value={f.minSeverity} onChange={(e) => set({ minSeverity: e.target.value })}>
            <option value="">warning (default)</option>
            {SEVERITIES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Event types" error={err("event_types")} hint="optional prefixes, e.g. agent, state.drift">
          <input
            type="text"
            className="mono"
            value={f.eventTypes}
            spellCheck={false}
            onChange={(e) => set({ eventTypes: e.target.value })}
          />
        </Field>
      </div>
      {editing ? (
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
          Enabled
        </label>
      ) : null}
      <div className="toolbar">
        <button type="submit" className="btn btn-primary" disabled={pending}>
          {submitLabel}
        </button>
        {extra}
      </div>
      {error && !shownNear ? <ProblemMessage error={error} /> : null}
    </form>
  );
}
