/**
 * The config fields of each channel type, and the delivery filter every type has (see
 * channel-form.tsx). On an edit the credential fields start blank with the stored value's mask as
 * placeholder: blank keeps it.
 */
import type { ChannelFields } from "./channel-config";
import { SEVERITIES } from "./channel-config";
import { Field } from "../../ui";

/** What the field groups share with the form. */
export interface FieldKit {
  f: ChannelFields;
  set: (patch: Partial<ChannelFields>) => void;
  editing: boolean;
  /** The field's error: the form's own check first, then the server's. */
  err: (field: string) => string | undefined;
  /** The stored value's mask. */
  stored: (key: string) => string | undefined;
  /** The hint of a credential field: on an edit, says a blank keeps the stored value. */
  keepHint: (key: string, what: string) => string;
}

export function WebhookFields({ f, set, editing, err, stored, keepHint }: FieldKit) {
  return (
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
            <input type="checkbox" checked={f.rotateSecret} onChange={(e) => set({ rotateSecret: e.target.checked })} />
            Generate a new signing secret
          </label>
        ) : null}
      </div>
      <Field label="Headers" error={err("headers")} hint={keepHint("headers", "optional, one “Name: value” per line")}>
        <textarea
          className="mono"
          rows={2}
          value={f.headers}
          spellCheck={false}
          onChange={(e) => set({ headers: e.target.value })}
        />
      </Field>
    </>
  );
}

/** Discord and Slack: one webhook URL, which is the credential. */
export function HookUrlField({ f, set, editing, err, stored, keepHint }: FieldKit) {
  return (
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
  );
}

export function NtfyFields({ f, set, editing, err, stored, keepHint }: FieldKit) {
  return (
    <div className="grid">
      <Field label="Server URL" error={err("server_url")} hint="default https://ntfy.sh">
        <input type="url" className="mono" value={f.serverUrl} onChange={(e) => set({ serverUrl: e.target.value })} />
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
        <input type="number" min={1} max={5} value={f.priority} onChange={(e) => set({ priority: e.target.value })} />
      </Field>
    </div>
  );
}

export function FilterFields({ f, set, err }: Pick<FieldKit, "f" | "set" | "err">) {
  return (
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
  );
}
