/**
 * The "New secret" form. The value field is uncontrolled: the typed value sits only in the input
 * element (React would mirror a controlled value into the DOM's value attribute and its state) and is
 * read once, into the POST body, then the field is emptied whatever the outcome.
 */
import { type FormEvent, useRef, useState } from "react";
import type { Agent } from "../../api/agents";
import { type HeldSecretWrite, isHeldWrite, type useCreateSecret } from "../../api/secrets";
import { Field, fieldError, ProblemMessage, Section } from "../../ui";
import { ApiError } from "../../api/client";
import { AgentPicker } from "./agent-picker";
import { parseExpiry, parseTags, restrictionOf } from "./restriction";

export function NewSecretForm({
  agents,
  creator,
  onCreated,
  onCancel,
}: {
  agents: Agent[];
  creator: ReturnType<typeof useCreateSecret>;
  /** The created secret's name, or the change request an approval policy turned the create into. */
  onCreated: (r: { name: string } | { held: HeldSecretWrite }) => void;
  onCancel: () => void;
}) {
  const valueRef = useRef<HTMLInputElement>(null);
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [nodeIds, setNodeIds] = useState<Set<string>>(new Set());
  const [tagText, setTagText] = useState("");
  const [expires, setExpires] = useState("");
  const [valueMissing, setValueMissing] = useState(false);
  const [submitted, setSubmitted] = useState(false);
  const tags = parseTags(tagText);
  const expiry = parseExpiry(expires, Date.now());
  const error = creator.error;
  const nameError =
    (submitted && name.trim() === "" ? "Name is required" : undefined) ??
    fieldError(error, "name") ??
    codeDetail(error, ["secret_exists", "invalid_name"]);
  const valueError =
    (valueMissing ? "Value is required" : undefined) ??
    fieldError(error, "value") ??
    codeDetail(error, ["invalid_value", "value_too_large"]);
  const restrictionError = fieldError(error, "restriction") ?? codeDetail(error, ["invalid_restriction"]);
  const expiresError =
    (expiry.ok ? undefined : expiry.message) ??
    fieldError(error, "expires_at") ??
    codeDetail(error, ["expires_at_in_past"]);
  const shownNear = nameError ?? valueError ?? restrictionError ?? expiresError;

  async function submit(e: FormEvent) {
    e.preventDefault();
    setSubmitted(true);
    const input = valueRef.current;
    const missing = !input || input.value === "";
    setValueMissing(missing);
    if (missing || name.trim() === "" || !tags.ok || !expiry.ok) return;
    const created = await creator.create(
      {
        name: name.trim(),
        ...(description.trim() ? { description: description.trim() } : {}),
        ...(expiry.expiresAt ? { expires_at: expiry.expiresAt } : {}),
        restriction: restrictionOf([...nodeIds], tags.tags),
      },
      () => {
        const value = input.value;
        input.value = "";
        return value;
      },
    );
    if (created) onCreated(isHeldWrite(created) ? { held: created } : { name: created.name });
  }

  return (
    <Section title="New secret">
      <form className="stack card" onSubmit={submit} aria-label="New secret" autoComplete="off">
        <div className="grid">
          <Field label="Name" error={nameError} hint="modules use it as {{ secrets.NAME }}">
            <input
              type="text"
              className="mono"
              value={name}
              autoComplete="off"
              spellCheck={false}
              onChange={(e) => setName(e.target.value)}
            />
          </Field>
          <Field label="Value" error={valueError} hint="write-only: never shown again, not even to you">
            <input ref={valueRef} type="password" autoComplete="off" spellCheck={false} />
          </Field>
          <Field label="Description" hint="optional">
            <input
              type="text"
              value={description}
              autoComplete="off"
              onChange={(e) => setDescription(e.target.value)}
            />
          </Field>
          <Field label="Expires" hint="optional; your local time" error={expiresError}>
            <input type="datetime-local" value={expires} onChange={(e) => setExpires(e.target.value)} />
          </Field>
        </div>
        <AgentPicker agents={agents} selected={nodeIds} onChange={setNodeIds} />
        <Field
          label="Tags"
          hint="k=v, comma separated: agents carrying every one of these tags may receive it"
          error={tags.ok ? restrictionError : tags.message}
        >
          <input
            type="text"
            className="mono"
            value={tagText}
            autoComplete="off"
            spellCheck={false}
            placeholder="env=prod, role=web"
            onChange={(e) => setTagText(e.target.value)}
          />
        </Field>
        <div className="toolbar">
          <button type="submit" className="btn btn-primary" disabled={creator.pending}>
            Create
          </button>
          <button type="button" className="btn" onClick={onCancel}>
            Cancel
          </button>
        </div>
        {error && !shownNear ? <ProblemMessage error={error} /> : null}
      </form>
    </Section>
  );
}

/** The API's detail when its code is one of these (errors about a field that name no `errors[]`). */
function codeDetail(error: unknown, codes: string[]): string | undefined {
  if (!(error instanceof ApiError) || !codes.includes(error.code)) return undefined;
  return `${error.problem.detail} (${error.code})`;
}
