/**
 * One agent (/agents/:nodeId?range=): what it is, its attributes, its tags (editable), its metrics
 * (charts loaded lazily: uPlot is not part of any other page), its recent operations and drift.
 */
import { lazy, Suspense } from "react";
import { Link, useParams } from "wouter";
import { useAgent, useAgentAttributes, useAgentMetrics } from "../api/agents";
import { useLatestDrift } from "../api/state";
import { driftSummary, formatBytes, osLabel, percent } from "../lib/agent-format";
import { isMetricRange, METRIC_RANGES, type MetricRange, toSeries } from "../lib/metrics";
import { useUrlState } from "../lib/url-state";
import { Badge, EmptyState, Field, Loading, Page, ProblemMessage, QueryStatus, Section, Time, toneOf } from "../ui";
import { DriftSection, OperationsSection, StateSection } from "./agent/state-sections";
import { ValuesSection } from "./agent/values-section";
import { TagsEditor } from "./agent/tags-editor";
import "./agent/agent.css";
import "./pages.css";
import { ApprovalBanner } from "./parts/approval-banner";
import { TableRegion } from "./parts/table-region";

const MetricsCharts = lazy(() => import("../charts/metrics-chart"));

export default function AgentDetailPage() {
  const { nodeId = "" } = useParams<{ nodeId: string }>();
  const agent = useAgent(nodeId);
  const a = agent.data;

  return (
    <Page title={a ? (a.name ?? a.node_id) : nodeId}>
      <QueryStatus query={agent}>
        {a ? (
          <>
            {a.status === "approved" ? (
              <p className="actions">
                <Link href={`/agents/${encodeURIComponent(a.node_id)}/terminal`} className="btn">
                  Open terminal
                </Link>
              </p>
            ) : null}
            {a.status === "approved" ? <ApprovalBanner action="terminal.open" /> : null}
            <dl className="props card">
              <dt>Node ID</dt>
              <dd className="mono">{a.node_id}</dd>
              <dt>Status</dt>
              <dd>
                <Badge tone={toneOf(a.status)}>{a.status}</Badge>{" "}
                <Badge tone={a.connected ? "ok" : "neutral"}>{a.connected ? "connected" : "disconnected"}</Badge>
                {a.status === "approved" ? <HeaderDrift nodeId={a.node_id} /> : null}
              </dd>
              <dt>OS</dt>
              <dd>{osLabel(a.attributes) || "—"}</dd>
              <dt>Address</dt>
              <dd className="mono">{a.address ?? "—"}</dd>
              <dt>Agent version</dt>
              <dd>{a.version ?? "—"}</dd>
              <dt>First seen</dt>
              <dd>
                <Time value={a.first_seen} />
              </dd>
              <dt>Last seen</dt>
              <dd>
                <Time value={a.last_seen} />
              </dd>
            </dl>
            <AttributesSection nodeId={a.node_id} />
            {a.status === "approved" ? <ValuesSection nodeId={a.node_id} /> : null}
            <TagsEditor nodeId={nodeId} tags={a.tags} />
            <MetricsSection nodeId={a.node_id} />
            {a.status === "approved" ? <StateSection nodeId={a.node_id} /> : null}
            <OperationsSection nodeId={a.node_id} />
            <DriftSection nodeId={a.node_id} />
          </>
        ) : null}
      </QueryStatus>
    </Page>
  );
}

/** The latest drift check's verdict beside approved/connected; it leads down to the Drift section. */
function HeaderDrift({ nodeId }: { nodeId: string }) {
  const drift = useLatestDrift(nodeId);
  if (drift.data === undefined) return null;
  const d = driftSummary(drift.data);
  const toDrift = () => document.querySelector('section[aria-label="Drift"]')?.scrollIntoView({ block: "start" });
  return (
    <>
      {" "}
      <button
        type="button"
        className="btn-link header-drift"
        onClick={toDrift}
        title={drift.data ? "Show the drift details" : "No drift check has run yet"}
      >
        <Badge tone={d.tone}>
          <span data-testid="agent-drift">{drift.data ? d.text : "drift unknown"}</span>
        </Badge>
      </button>
    </>
  );
}

function AttributesSection({ nodeId }: { nodeId: string }) {
  const attrs = useAgentAttributes(nodeId);
  const entries = Object.entries(attrs.data?.attributes ?? {}).sort(([x], [y]) => x.localeCompare(y));
  return (
    <Section title="Attributes">
      <QueryStatus query={attrs}>
        {entries.length === 0 ? (
          <EmptyState title="No attributes reported yet." />
        ) : (
          <dl className="props">
            {entries.map(([k, v]) => (
              <div key={k} style={{ display: "contents" }}>
                <dt className="mono">{k}</dt>
                <dd className="mono">{v}</dd>
              </div>
            ))}
          </dl>
        )}
      </QueryStatus>
    </Section>
  );
}

const RANGE_LABELS: Record<MetricRange, string> = { "1h": "hour", "6h": "6 hours", "24h": "24 hours" };

function MetricsSection({ nodeId }: { nodeId: string }) {
  const [params, setParams] = useUrlState();
  const raw = params.get("range");
  const range: MetricRange = isMetricRange(raw) ? raw : "1h";
  const metrics = useAgentMetrics(nodeId, METRIC_RANGES[range], range);
  const samples = metrics.data?.samples ?? [];
  const latest = samples[0];
  const series = toSeries(samples);

  return (
    <Section
      title="Metrics"
      actions={
        <Field label="Range">
          <select
            value={range}
            onChange={(e) => setParams({ range: e.target.value === "1h" ? undefined : e.target.value })}
          >
            <option value="1h">Last hour</option>
            <option value="6h">Last 6 hours</option>
            <option value="24h">Last 24 hours</option>
          </select>
        </Field>
      }
    >
      {metrics.error ? <ProblemMessage error={metrics.error} /> : null}
      {metrics.data === undefined && !metrics.error ? <Loading label="Loading metrics…" /> : null}
      {metrics.data && samples.length === 0 ? (
        <EmptyState title="No metrics in this range.">The agent reports metrics while it is connected.</EmptyState>
      ) : null}
      {samples.length > 0 ? (
        <>
          <Suspense fallback={<Loading label="Loading charts…" />}>
            <MetricsCharts series={series} rangeLabel={RANGE_LABELS[range]} />
          </Suspense>
          {latest ? (
            <TableRegion label="Latest metrics sample">
              <table className="table cards">
                <caption className="visually-hidden">Latest metrics sample</caption>
                <thead>
                  <tr>
                    <th scope="col">Taken</th>
                    <th scope="col">CPU</th>
                    <th scope="col">Memory</th>
                    <th scope="col">Disk</th>
                    <th scope="col">Load (1/5/15 min)</th>
                  </tr>
                </thead>
                <tbody>
                  <tr>
                    <td data-label="Taken">
                      <Time value={latest.taken_at} />
                    </td>
                    <td data-label="CPU">{latest.cpu_percent.toFixed(1)} %</td>
                    <td data-label="Memory">
                      {percent(latest.memory_used, latest.memory_total)} % ({formatBytes(latest.memory_used)} of{" "}
                      {formatBytes(latest.memory_total)})
                    </td>
                    <td data-label="Disk">
                      {percent(latest.disk_used, latest.disk_total)} % ({formatBytes(latest.disk_used)} of{" "}
                      {formatBytes(latest.disk_total)})
                    </td>
                    <td data-label="Load (1/5/15 min)">
                      {latest.load1.toFixed(2)} / {latest.load5.toFixed(2)} / {latest.load15.toFixed(2)}
                    </td>
                  </tr>
                </tbody>
              </table>
            </TableRegion>
          ) : null}
        </>
      ) : null}
    </Section>
  );
}
