/**
 * One operation's per-resource results: a table (Resource, Type, Status, Message), the diff of every
 * changed resource, and an "Output" disclosure for exec resources that captured stdout/stderr (read
 * from the API only when opened). Used by the run, operation and agent pages.
 */
import { useState } from "react";
import { type OperationDetail, type ResourceResult, useOperationOutput } from "../../api/runs";
import { Badge, EmptyState, QueryStatus, toneOf } from "../../ui";
import { type DiffMode, DiffModeToggle, DiffView } from "../../ui/diff-view";
import { TableRegion } from "./table-region";

const resourceKey = (r: { module: string; id: string }) => `${r.module}/${r.id}`;

const statusTone = (status: string) => (status === "changed" ? "info" : toneOf(status));

/**
 * `mode` given: the page owns the "Side by side" switch (one for many operations); otherwise this
 * component shows its own.
 */
export function OperationResults({
  operation,
  mode,
  label,
  lazyDiffs = false,
}: {
  operation: OperationDetail;
  mode?: DiffMode;
  label?: string;
  /** Build each diff only when scrolled near (pages with many operations; see DiffView). */
  lazyDiffs?: boolean;
}) {
  const [ownMode, setOwnMode] = useState<DiffMode>("unified");
  const shown = mode ?? ownMode;
  const results = operation.results;
  const changed = results.filter((r) => r.diff.trim() !== "");
  const name = label ?? operation.node_name;
  if (results.length === 0) {
    return (
      <div className="operation-results">
        {operation.error ? (
          <p className="operation-error">
            {operation.error}
            {operation.error_code ? <code className="problem-code">{operation.error_code}</code> : null}
          </p>
        ) : (
          <EmptyState title="No resource results." />
        )}
      </div>
    );
  }
  return (
    <div className="operation-results">
      {operation.error ? (
        <p className="operation-error">
          {operation.error}
          {operation.error_code ? <code className="problem-code">{operation.error_code}</code> : null}
        </p>
      ) : null}
      <TableRegion label={`Results on ${name}`}>
        <table className="table cards">
          <thead>
            <tr>
              <th scope="col">Resource</th>
              <th scope="col">Type</th>
              <th scope="col">Status</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody>
            {results.map((r) => (
              <tr key={resourceKey(r)}>
                <td className="mono" data-label="Resource">
                  {resourceKey(r)}
                </td>
                <td data-label="Type">{r.type}</td>
                <td data-label="Status">
                  <Badge tone={statusTone(r.status)}>{r.status}</Badge>
                </td>
                <td data-label="Message">
                  {r.message ? <span className="result-message">{r.message}</span> : null}
                  {r.has_output ? <OutputDisclosure operation={operation} result={r} /> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
      {changed.length > 0 ? (
        <div className="operation-diffs">
          {mode === undefined ? (
            <div className="diff-toolbar">
              <DiffModeToggle mode={ownMode} onChange={setOwnMode} />
            </div>
          ) : null}
          {changed.map((r) => (
            <figure key={resourceKey(r)} className="resource-diff">
              <figcaption className="mono">
                {resourceKey(r)} <span className="muted">({r.type})</span>
              </figcaption>
              <DiffView diff={r.diff} mode={shown} label={`${resourceKey(r)} on ${name}`} lazy={lazyDiffs} />
            </figure>
          ))}
        </div>
      ) : null}
    </div>
  );
}

/** stdout/stderr of one exec resource, loaded when opened (the output can be large). */
function OutputDisclosure({ operation, result }: { operation: OperationDetail; result: ResourceResult }) {
  const [open, setOpen] = useState(false);
  const output = useOperationOutput(operation.node_id, operation.id, open);
  const mine = output.data?.outputs.find((o) => o.id === result.id && o.module === result.module);
  return (
    <details className="output-disclosure" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Output</summary>
      {open ? (
        <QueryStatus query={output}>
          {mine ? (
            <div className="output-streams">
              {mine.stdout ? (
                <>
                  <p className="muted">stdout</p>
                  <pre className="output-text" data-testid="output-stdout">
                    {mine.stdout}
                  </pre>
                </>
              ) : null}
              {mine.stderr ? (
                <>
                  <p className="muted">stderr</p>
                  <pre className="output-text" data-testid="output-stderr">
                    {mine.stderr}
                  </pre>
                </>
              ) : null}
              {!mine.stdout && !mine.stderr ? <p className="muted">No output.</p> : null}
            </div>
          ) : (
            <p className="muted">No output captured.</p>
          )}
        </QueryStatus>
      ) : null}
    </details>
  );
}
