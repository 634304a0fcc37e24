/**
 * The fields of a value set, for "New value set" (name chosen here) and for editing (name fixed).
 * The values are YAML text: the API keeps it, so an origin names the line an operator wrote.
 */
import { type FormEvent, type ReactNode, useState } from "react";
import type { ValueSet, ValueSetBody } from "../../api/values";
import { Field, fieldError, ProblemMessage } from "../../ui";

export const DEFAULTS_SET = "defaults";

export function ValueSetForm({
  set,
  submitLabel,
  pending,
  error,
  onSubmit,
  extra,
}: {
  set?: ValueSet;
  submitLabel: string;
  pending: boolean;
  error: unknown;
  onSubmit: (name: string, body: ValueSetBody) => void;
  extra?: ReactNode;
}) {
  const editing = set !== undefined;
  const [name, setName] = useState(set?.name ?? "");
  const [selector, setSelector] = useState(set?.selector ?? "");
  const [priority, setPriority] = useState(String(set?.priority ?? 0));
  const [description, setDescription] = useState(set?.description ?? "");
  const [content, setContent] = useState(set?.content ?? "");
  const isDefaults = name.trim() === DEFAULTS_SET;
  const near = ["name", "selector", "priority", "content"].map((f) => fieldError(error, f)).find(Boolean);

  function submit(e: FormEvent) {
    e.preventDefault();
    const body: ValueSetBody = { content, description };
    if (!isDefaults) {
      body.selector = selector.trim();
      body.priority = Number(priority) || 0;
    }
    onSubmit(name.trim(), body);
  }

  return (
    <form
      className="stack card"
      onSubmit={submit}
      aria-label={editing ? "Edit value set" : "New value set"}
      autoComplete="off"
    >
      <div className="grid">
        <Field
          label="Name"
          error={fieldError(error, "name")}
          hint={editing ? undefined : "defaults is the lowest layer and takes no selector"}
        >
          <input
            type="text"
            value={name}
            readOnly={editing}
            spellCheck={false}
            onChange={(e) => setName(e.target.value)}
          />
        </Field>
        <Field label="Description">
          <input type="text" value={description} onChange={(e) => setDescription(e.target.value)} />
        </Field>
      </div>
      {isDefaults ? null : (
        <div className="grid">
          <Field label="Selector" error={fieldError(error, "selector")} hint="the agents it applies to, e.g. env=prod">
            <input type="text" value={selector} spellCheck={false} onChange={(e) => setSelector(e.target.value)} />
          </Field>
          <Field
            label="Priority"
            error={fieldError(error, "priority")}
            hint="higher wins; equal priorities: the later name wins"
          >
            <input type="number" inputMode="numeric" value={priority} onChange={(e) => setPriority(e.target.value)} />
          </Field>
        </div>
      )}
      <Field
        label="Values (YAML)"
        error={fieldError(error, "content")}
        hint="a map; maps merge over lower layers, lists and scalars replace"
      >
        <textarea
          className="mono"
          rows={12}
          spellCheck={false}
          value={content}
          onChange={(e) => setContent(e.target.value)}
        />
      </Field>
      <div className="toolbar">
        <button type="submit" className="btn btn-primary" disabled={pending}>
          {submitLabel}
        </button>
        {extra}
      </div>
      {error && !near ? <ProblemMessage error={error} /> : null}
    </form>
  );
}
