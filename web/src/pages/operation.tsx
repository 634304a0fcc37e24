/**
 * One operation (/operations/:operationId): what ran where, by whom, how it ended, and its
 * per-resource results with diffs and captured output. Refetched every 2 s only while it is open.
 */
import { Link, useParams } from "wouter";
import { useOperation } from "../api/state";
import { isOpen, resultText } from "../lib/operation-text";
import { Page, QueryStatus, Section, Time } from "../ui";
import { OperationBadge } from "./agent/operation-badge";
import { OperationResults } from "./parts/operation-results";
import "./pages.css";

export default function OperationPage() {
  const { operationId = "" } = useParams<{ operationId: string }>();
  const op = useOperation(operationId);
  const o = op.data;
  return (
    <Page title={`Operation ${operationId}`}>
      <QueryStatus query={op}>
        {o ? (
          <>
            <dl className="props card">
              <dt>Agent</dt>
              <dd>
                <Link href={`/agents/${encodeURIComponent(o.node_id)}`}>{o.node_name || o.node_id}</Link>
              </dd>
              <dt>Kind</dt>
              <dd>{o.kind}</dd>
              <dt>Status</dt>
              <dd>
                <OperationBadge operation={o} testId="operation-status" />
                {isOpen(o.status) ? <span className="muted"> (refreshing until it ends)</span> : null}
              </dd>
              <dt>Modules</dt>
              <dd className="mono">{o.modules.join(", ")}</dd>
              <dt>Result</dt>
              <dd>
                {resultText(o)}
                {o.error_code ? (
                  <>
                    {" "}
                    <code className="problem-code">{o.error_code}</code>
                  </>
                ) : null}
              </dd>
              <dt>Started by</dt>
              <dd>
                {o.assignment ? (
                  <>
                    assignment{" "}
                    {o.run_id ? (
                      <Link href={`/assignments/${encodeURIComponent(o.assignment)}/runs/${o.run_id}`}>
                        {o.assignment}
                      </Link>
                    ) : (
                      o.assignment
                    )}
                    {o.actor.name ? ` (${o.actor.name})` : null}
                  </>
                ) : (
                  o.actor.name || "—"
                )}
              </dd>
              <dt>Created</dt>
              <dd>
                <Time value={o.created_at} />
              </dd>
              <dt>Started</dt>
              <dd>
                <Time value={o.started_at} />
              </dd>
              <dt>Finished</dt>
              <dd>
                <Time value={o.finished_at} />
              </dd>
            </dl>
            <Section title="Results">
              <OperationResults operation={o} />
            </Section>
          </>
        ) : null}
      </QueryStatus>
    </Page>
  );
}
