/**
 * The fields of a channel, for "New channel" (type chosen here) and for editing (type fixed). On an
 * edit the credential fields start blank with the stored value's mask as placeholder: blank keeps it.
 */
import { type FormEvent, type ReactNode, useState } from "react";
import type { Channel, ChannelType } from "../../api/channels";
import { ApiError } from "../../api/client";
import { Field, fieldError, ProblemMessage } from "../../ui";
import { buildConfig, CHANNEL_TYPES, type ChannelFields, emptyFields, fieldsFrom } from "./channel-config";
import { FilterFields, HookUrlField, NtfyFields, WebhookFields, type FieldKit } from "./channel-fields";

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

  const kit: FieldKit = { f, set, editing, err, stored, keepHint };

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
      {type === "webhook" ? <WebhookFields {...kit} /> : null}
      {type === "discord" || type === "slack" ? <HookUrlField {...kit} /> : null}
      {type === "ntfy" ? <NtfyFields {...kit} /> : null}
      <FilterFields {...kit} />
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
