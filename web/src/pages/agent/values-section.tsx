/**
 * An agent's merged values (what its modules read as `values`), one row per leaf key, with the set
 * and line each value came from and what it overrode: the console's `orchctl values explain`.
 * "Edit this agent's values" opens its own layer (the highest) in the YAML editor; a save shows the
 * new merged view at once.
 */
import { useEffect, useRef, useState } from "react";
import { Link } from "wouter";
import { type AgentValues, type ValueOrigin, useAgentValues } from "../../api/values";
import { EmptyState, QueryStatus, Section } from "../../ui";
import { TableRegion } from "../parts/table-region";
import { OwnValuesEditor } from "./own-values-editor";

const show = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

function Origin({ o }: { o: ValueOrigin["origin"] }) {
  const where = o.line === null ? "" : `, line ${o.line}`;
  // Its own values are edited on this page (no page of their own to link to).
  if (o.layer === "agent" || o.set === null) return <span>this agent's own values{where}</span>;
  return (
    <Link href={`/values/${encodeURIComponent(o.set)}${o.line === null ? "" : `#L${o.line}`}`} className="mono">
      {o.set}
      {where}
    </Link>
  );
}

export function ValuesSection({ nodeId }: { nodeId: string }) {
  const values = useAgentValues(nodeId);
  const [editing, setEditing] = useState(false);
  const [notice, setNotice] = useState<string | undefined>();
  // Focus returns to the button that opened the editor once it closes (not to the page's top).
  const editButton = useRef<HTMLButtonElement>(null);
  const closed = useRef(false);
  useEffect(() => {
    if (!editing && closed.current) editButton.current?.focus();
  }, [editing]);
  const close = (message?: string) => {
    closed.current = true;
    setNotice(message);
    setEditing(false);
  };
  return (
    <Section
      title="Values"
      actions={
        values.data && !editing ? (
          <button
            ref={editButton}
            type="button"
            className="btn"
            onClick={() => {
              setNotice(undefined);
              setEditing(true);
            }}
          >
            Edit this agent's values
          </button>
        ) : null
      }
    >
      <QueryStatus query={values}>
        {values.data ? (
          <>
            {editing ? (
              <OwnValuesEditor
                nodeId={nodeId}
                initial={values.data.own_content}
                onSaved={() => close("Saved this agent's values.")}
                onCancel={() => close()}
              />
            ) : null}
            {notice ? (
              <p role="status" className="muted values-text">
                {notice}
              </p>
            ) : null}
            <MergedValues values={values.data} />
          </>
        ) : null}
      </QueryStatus>
    </Section>
  );
}

function MergedValues({ values }: { values: AgentValues }) {
  const origins = values.origins;
  if (origins.length === 0)
    return (
      <EmptyState title="No values reach this agent.">
        Value sets whose selector matches it, <Link href="/values">defaults</Link>, and its own values would show here.
      </EmptyState>
    );
  return (
    <>
      <p className="muted values-text">
        Layers, lowest first: {values.sets.length ? values.sets.join(", ") : "none"}
        {Object.keys(values.own).length ? ", then this agent's own values" : ""}.
      </p>
      <TableRegion label="Values and their origins">
        <table className="table cards">
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Value</th>
              <th scope="col">From</th>
              <th scope="col">Overrides</th>
            </tr>
          </thead>
          <tbody>
            {origins.map((o) => (
              <tr key={o.path}>
                <td className="mono" data-label="Key">
                  {o.path}
                </td>
                <td className="mono" data-label="Value">
                  {show(o.value)}
                </td>
                <td data-label="From">
                  <Origin o={o.origin} />
                </td>
                <td data-label="Overrides">
                  {o.overridden.length === 0 ? (
                    <span className="muted">—</span>
                  ) : (
                    o.overridden.map((x, i) => (
                      <span key={`${x.layer}:${x.set ?? ""}`}>
                        {i ? ", " : ""}
                        <Origin o={x} />
                      </span>
                    ))
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </>
  );
}
