/** The agent page's state views: its newest operations and its latest drift check. */
import { useAgentOperations, useLatestDrift } from "../../api/state";
import { Badge, EmptyState, QueryStatus, Section, Time, toneOf } from "../../ui";
import { TableRegion } from "../parts/table-region";

export function OperationsSection({ nodeId }: { nodeId: string }) {
  const ops = useAgentOperations(nodeId);
  const list = ops.data?.operations ?? [];
  return (
    <Section title="Recent operations">
      <QueryStatus query={ops}>
        {list.length === 0 ? (
          <EmptyState title="No operations yet.">Apply, plan and drift checks of this agent appear here.</EmptyState>
        ) : (
          <TableRegion label="Recent operations">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Started</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col">Modules</th>
                  <th scope="col">Result</th>
                  <th scope="col">By</th>
                  <th scope="col">ID</th>
                </tr>
              </thead>
              <tbody>
                {list.map((o) => (
                  <tr key={o.id}>
                    <td>
                      <Time value={o.started_at ?? o.created_at} />
                    </td>
                    <td>{o.kind}</td>
                    <td>
                      <Badge tone={toneOf(o.status)}>{o.status.replace("_", " ")}</Badge>
                    </td>
                    <td className="mono">{o.modules.join(", ")}</td>
                    <td>
                      {o.error ? (
                        <span title={o.error_code ?? undefined}>{o.error}</span>
                      ) : (
                        `${o.summary.ok} ok, ${o.summary.changed} changed, ${o.summary.failed} failed`
                      )}
                    </td>
                    <td>{o.actor.name || o.assignment || "—"}</td>
                    <td className="mono">{o.id}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
      </QueryStatus>
    </Section>
  );
}

export function DriftSection({ nodeId }: { nodeId: string }) {
  const drift = useLatestDrift(nodeId);
  const d = drift.data;
  return (
    <Section title="Drift">
      <QueryStatus query={drift}>
        {d === null ? (
          <EmptyState title="No drift check yet.">
            Run <code>orchctl drift {nodeId} --check</code> to compare the machine with its last apply.
          </EmptyState>
        ) : d ? (
          <div className="stack">
            <p>
              <Badge tone={d.drifted ? "warn" : "ok"}>{d.drifted ? "drifted" : "in sync"}</Badge> checked{" "}
              <Time value={d.checked_at} /> ({d.resources.length} resource{d.resources.length === 1 ? "" : "s"})
            </p>
            {d.resources.filter((r) => r.status !== "ok").length > 0 ? (
              <ul className="list">
                {d.resources
                  .filter((r) => r.status !== "ok")
                  .map((r) => (
                    <li key={`${r.module}/${r.id}`}>
                      <div className="list-main">
                        <span className="mono">
                          {r.module} / {r.type} {r.id}
                        </span>{" "}
                        <Badge tone={toneOf(r.status)}>{r.status}</Badge>
                        {r.message ? <div className="muted">{r.message}</div> : null}
                        {r.diff ? <pre className="diff">{r.diff}</pre> : null}
                      </div>
                    </li>
                  ))}
              </ul>
            ) : null}
          </div>
        ) : null}
      </QueryStatus>
    </Section>
  );
}
