/**
 * One value set (/values/:name?edit=1): where it applies, its YAML with line numbers (an agent's
 * page names these lines as the origin of each value), and "Edit" and "Delete".
 */
import { useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import { type ValueSet, useDeleteValueSet, usePutValueSet, useValueSet } from "../api/values";
import { useUrlState } from "../lib/url-state";
import { DeleteWithConfirm, Page, ProblemMessage, QueryStatus, Section, Time } from "../ui";
import "./pages.css";
import { ValueSetForm } from "./values/value-set-form";

export default function ValueSetPage() {
  const { name = "" } = useParams<{ name: string }>();
  const set = useValueSet(name);
  return <QueryStatus query={set}>{set.data ? <ValueSetView set={set.data} /> : null}</QueryStatus>;
}

function ValueSetView({ set }: { set: ValueSet }) {
  const [, navigate] = useLocation();
  const [params, setParams] = useUrlState();
  const editing = params.get("edit") === "1";
  const put = usePutValueSet();
  const remove = useDeleteValueSet();
  const [notice, setNotice] = useState<string | undefined>();
  const lines = set.content.replace(/\n$/, "").split("\n");

  return (
    <Page
      title={set.name}
      actions={
        editing ? null : (
          <>
            <button
              type="button"
              className="btn"
              onClick={() => {
                put.reset();
                setNotice(undefined);
                setParams({ edit: "1" });
              }}
            >
              Edit
            </button>
            <DeleteWithConfirm
              mutation={remove}
              target={set.name}
              title={`Delete value set ${set.name}?`}
              showProblem={false}
              onDeleted={() => navigate("/values")}
            >
              <p>Modules reading its keys get the next layer's values, or fail to render if none has them.</p>
            </DeleteWithConfirm>
          </>
        )
      }
    >
      <p className="muted">
        <Link href="/values">Values</Link> ·{" "}
        {set.selector === null ? (
          "every agent, lowest layer"
        ) : (
          <>
            agents matching <span className="mono">{set.selector}</span>, priority {set.priority}
          </>
        )}{" "}
        · {set.key_count} {set.key_count === 1 ? "key" : "keys"} · updated <Time value={set.updated_at} /> by{" "}
        {set.updated_by_name || set.updated_by}
        {set.source ? <> · from source {set.source}</> : null}
      </p>
      {set.description ? <p>{set.description}</p> : null}
      {notice ? (
        <p role="status" className="muted">
          {notice}
        </p>
      ) : null}
      {remove.error ? <ProblemMessage error={remove.error} /> : null}
      {editing ? (
        <Section title="Edit value set">
          <ValueSetForm
            set={set}
            submitLabel="Save"
            pending={put.isPending}
            error={put.error}
            onSubmit={(name, body) =>
              put.mutate(
                { name, body },
                {
                  onSuccess: () => {
                    setNotice(`Saved value set ${name}.`);
                    setParams({ edit: undefined }, { replace: true });
                  },
                },
              )
            }
            extra={
              <button type="button" className="btn" onClick={() => setParams({ edit: undefined })}>
                Cancel
              </button>
            }
          />
        </Section>
      ) : (
        <Section title="Values">
          <ol className="code-lines mono" aria-label={`${set.name} values, by line`}>
            {lines.map((l, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a line's number is its identity here.
              <li key={i} id={`L${i + 1}`}>
                {l || "\u00a0"}
              </li>
            ))}
          </ol>
        </Section>
      )}
    </Page>
  );
}
