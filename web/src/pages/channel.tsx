/**
 * One channel (/channels/:id?status=&cursor=): its configuration with credentials masked, and for
 * admins "Test" (the receiver's status code or the refusal reason), "Save" and "Delete"; everyone
 * sees the deliveries history, paged, newest first.
 */
import { Fragment, useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import {
  type Channel,
  type ChannelTest,
  type DeliveryStatus,
  useChannel,
  useDeleteChannel,
  useDeliveries,
  useTestChannel,
  useUpdateChannel,
} from "../api/channels";
import { useSession } from "../api/session";
import { useUrlState } from "../lib/url-state";
import {
  Badge,
  Banner,
  DeleteWithConfirm,
  EmptyState,
  Page,
  ProblemMessage,
  QueryStatus,
  Section,
  Time,
  toneOf,
} from "../ui";
import { configRows, testSummary } from "./channels/channel-config";
import { ChannelForm } from "./channels/channel-form";
import "./pages.css";
import { TableRegion } from "./parts/table-region";

const STATUSES: readonly DeliveryStatus[] = ["pending", "in_flight", "delivered", "failed", "suppressed", "cancelled"];

export default function ChannelPage() {
  const { id = "" } = useParams<{ id: string }>();
  const channel = useChannel(id);
  return <QueryStatus query={channel}>{channel.data ? <ChannelView channel={channel.data} /> : null}</QueryStatus>;
}

function ChannelView({ channel }: { channel: Channel }) {
  const { isAdmin } = useSession();
  const [, navigate] = useLocation();
  const test = useTestChannel(channel.id);
  const update = useUpdateChannel(channel.id);
  const remove = useDeleteChannel();
  const [saved, setSaved] = useState<Channel | undefined>();

  return (
    <Page
      title={channel.name}
      actions={
        isAdmin ? (
          <>
            <button type="button" className="btn" disabled={test.isPending} onClick={() => test.mutate()}>
              {test.isPending ? "Testing…" : "Test"}
            </button>
            <DeleteWithConfirm
              mutation={remove}
              target={channel.id}
              title={`Delete channel ${channel.name}?`}
              showProblem={false}
              onDeleted={() => navigate("/channels")}
            >
              <p>Its deliveries history goes with it. This cannot be undone.</p>
            </DeleteWithConfirm>
          </>
        ) : null
      }
    >
      <p className="muted">
        <Link href="/channels">Channels</Link> · {channel.channel_type} ·{" "}
        {channel.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="danger">disabled</Badge>}
        {channel.disabled_reason ? <> {channel.disabled_reason}</> : null}
      </p>
      {test.data || test.error ? <TestResult result={test.data} error={test.error} /> : null}
      {remove.error ? <ProblemMessage error={remove.error} /> : null}
      <Section title="Configuration">
        <dl className="props card">
          {configRows(channel.config).map((r) => (
            <Fragment key={r.key}>
              <dt>{r.key}</dt>
              <dd className="mono">{r.value}</dd>
            </Fragment>
          ))}
          <dt>created</dt>
          <dd>
            <Time value={channel.created_at * 1000} /> by {channel.created_by}
          </dd>
        </dl>
      </Section>
      {isAdmin ? (
        <Section title="Edit">
          {saved ? <SavedNotice channel={saved} /> : null}
          <ChannelForm
            key={`${channel.id}:${channel.updated_at}`}
            channel={channel}
            submitLabel="Save"
            pending={update.isPending}
            error={update.error}
            onSubmit={({ name, config, enabled }) => {
              setSaved(undefined);
              update.mutate(
                { ...(name !== channel.name ? { name } : {}), config, enabled },
                { onSuccess: (c) => setSaved(c) },
              );
            }}
          />
        </Section>
      ) : null}
      <Deliveries channelId={channel.id} />
    </Page>
  );
}

function TestResult({ result, error }: { result: ChannelTest | undefined; error: unknown }) {
  if (error) {
    return (
      <div data-testid="channel-test-result">
        <ProblemMessage error={error} />
      </div>
    );
  }
  if (!result) return null;
  return (
    <div data-testid="channel-test-result">
      <Banner kind={result.delivered ? "success" : "error"}>
        {testSummary(result)}
        {result.response_snippet ? (
          <>
            {" "}
            Response: <code className="mono">{result.response_snippet}</code>
          </>
        ) : null}
      </Banner>
    </div>
  );
}

function SavedNotice({ channel }: { channel: Channel }) {
  const secret = typeof channel.config.secret === "string" ? channel.config.secret : "";
  const generated = secret !== "" && !secret.includes("*");
  return (
    <Banner kind="success">
      Saved.
      {generated ? (
        <>
          {" "}
          The new signing secret, shown this once: <code className="mono">{secret}</code>
        </>
      ) : null}
    </Banner>
  );
}

function Deliveries({ channelId }: { channelId: string }) {
  const [params, setParams] = useUrlState();
  const statusParam = params.get("status") ?? "";
  const status = (STATUSES as readonly string[]).includes(statusParam) ? (statusParam as DeliveryStatus) : "";
  const cursor = params.get("cursor") ?? undefined;
  const list = useDeliveries(channelId, status, cursor);
  const deliveries = list.data?.deliveries ?? [];
  return (
    <Section
      title="Deliveries"
      actions={
        <label className="check">
          Status
          <select value={status} onChange={(e) => setParams({ status: e.target.value, cursor: undefined })}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      }
    >
      <QueryStatus query={list}>
        {deliveries.length === 0 ? (
          <EmptyState title="No deliveries yet." />
        ) : (
          <TableRegion label="Deliveries">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Created</th>
                  <th scope="col">Event</th>
                  <th scope="col">Severity</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last answer</th>
                </tr>
              </thead>
              <tbody>
                {deliveries.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <Time value={d.created_at_ms} />
                    </td>
                    <td className="mono">{d.event_type}</td>
                    <td>
                      <Badge tone={toneOf(d.severity)}>{d.severity}</Badge>
                    </td>
                    <td>
                      <Badge tone={d.status === "delivered" ? "ok" : d.status === "failed" ? "danger" : "neutral"}>
                        {d.status}
                      </Badge>
                    </td>
                    <td>{d.attempts}</td>
                    <td>
                      {d.last_status_code !== null ? <span className="mono">{d.last_status_code}</span> : null}
                      {d.last_error ? <span className="muted"> {d.last_error}</span> : null}
                      {d.last_status_code === null && !d.last_error ? <span className="muted">—</span> : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
        <div className="toolbar">
          {cursor ? (
            <button type="button" className="btn" onClick={() => setParams({ cursor: undefined })}>
              Newest
            </button>
          ) : null}
          <button
            type="button"
            className="btn"
            disabled={!list.data?.has_more || !list.data.next_cursor}
            onClick={() => setParams({ cursor: list.data?.next_cursor ?? undefined })}
          >
            Older
          </button>
        </div>
      </QueryStatus>
    </Section>
  );
}
