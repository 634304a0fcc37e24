/**
 * An agent's merged values (what its modules read as `values`), one row per leaf key, with the set
 * and line each value came from and what it overrode: the console's `orchctl values explain`.
 */
import { Link } from "wouter";
import { type ValueOrigin, useAgentValues } from "../../api/values";
import { EmptyState, QueryStatus, Section } from "../../ui";
import { TableRegion } from "../parts/table-region";

const show = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

function Origin({ o }: { o: ValueOrigin["origin"] }) {
  if (o.layer === "agent" || o.set === null) return <span>this agent's own values</span>;
  const where = o.line === null ? "" : `, line ${o.line}`;
  return (
    <Link href={`/values/${encodeURIComponent(o.set)}${o.line === null ? "" : `#L${o.line}`}`} className="mono">
      {o.set}
      {where}
    </Link>
  );
}

export function ValuesSection({ nodeId }: { nodeId: string }) {
  const values = useAgentValues(nodeId);
  const origins = values.data?.origins ?? [];
  return (
    <Section title="Values">
      <QueryStatus query={values}>
        {origins.length === 0 ? (
          <EmptyState title="No values reach this agent.">
            Value sets whose selector matches it, and <Link href="/values">defaults</Link>, would show here.
          </EmptyState>
        ) : (
          <>
            <p className="muted">
              Layers, lowest first: {values.data?.sets.length ? values.data.sets.join(", ") : "none"}
              {Object.keys(values.data?.own ?? {}).length ? ", then this agent's own values" : ""}.
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
        )}
      </QueryStatus>
    </Section>
  );
}
