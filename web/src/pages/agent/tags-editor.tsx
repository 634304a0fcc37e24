/**
 * Tags of one agent: add (or overwrite) one tag, edit a value, remove a tag. Keys and values are
 * checked with the agents service's rules as they are typed; the API's field errors appear under
 * the field they name, and the typed text stays.
 */
import { type FormEvent, useState } from "react";
import { useRemoveTag, useSetTag } from "../../api/agents";
import { tagErrors } from "../../lib/rules";
import { EmptyState, Field, fieldError, ProblemMessage, Section } from "../../ui";

export function TagsEditor({ nodeId, tags }: { nodeId: string; tags: Record<string, string> }) {
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const setTag = useSetTag(nodeId);
  const removeTag = useRemoveTag(nodeId);
  const local = tagErrors(key.trim(), value);
  const keyError = local.key ?? fieldError(setTag.error, "key");
  const valueError = local.value ?? fieldError(setTag.error, "value");
  const otherError = setTag.error && !fieldError(setTag.error, "key") && !fieldError(setTag.error, "value");
  const keys = Object.keys(tags).sort();

  function submit(e: FormEvent) {
    e.preventDefault();
    const k = key.trim();
    if (k === "" || local.key || local.value) return;
    setTag.mutate(
      { key: k, value },
      {
        onSuccess: () => {
          setKey("");
          setValue("");
        },
      },
    );
  }

  return (
    <Section title="Tags">
      {keys.length === 0 ? (
        <EmptyState title="No tags yet.">Tags select agents for assignments, e.g. role=web.</EmptyState>
      ) : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Value</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k}>
                  <td className="mono">{k}</td>
                  <td className="mono">{tags[k]}</td>
                  <td>
                    <div className="toolbar">
                      <button
                        type="button"
                        className="btn btn-small"
                        aria-label={`Edit tag ${k}`}
                        onClick={() => {
                          setKey(k);
                          setValue(tags[k] ?? "");
                        }}
                      >
                        Edit
                      </button>
                      <button
                        type="button"
                        className="btn btn-danger btn-small"
                        disabled={removeTag.isPending && removeTag.variables?.key === k}
                        onClick={() => removeTag.mutate({ key: k })}
                      >
                        Remove tag {k}
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {removeTag.error ? <ProblemMessage error={removeTag.error} /> : null}
      <form className="toolbar" onSubmit={submit} aria-label="Add tag">
        <Field label="Tag key" error={keyError}>
          <input
            type="text"
            className="mono"
            value={key}
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => setKey(e.target.value)}
          />
        </Field>
        <Field label="Tag value" error={valueError}>
          <input
            type="text"
            className="mono"
            value={value}
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => setValue(e.target.value)}
          />
        </Field>
        <button type="submit" className="btn btn-primary" disabled={setTag.isPending || key.trim() === ""}>
          Add tag
        </button>
      </form>
      {otherError ? <ProblemMessage error={setTag.error} /> : null}
    </Section>
  );
}
