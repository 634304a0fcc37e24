/**
 * Channels (/channels?new=1&cursor=): where events are delivered (webhook, Discord, Slack, ntfy).
 * Everyone sees the list with credentials masked; only admins get "New channel" (the API refuses
 * anyone else). A webhook created without a secret gets one generated, shown here once.
 */
import { useState } from "react";
import { Link } from "wouter";
import { type Channel, useChannels, useCreateChannel } from "../api/channels";
import { useSession } from "../api/session";
import { useUrlState } from "../lib/url-state";
import { Badge, Banner, EmptyState, Page, QueryStatus, Section, Time } from "../ui";
import { ChannelForm } from "./channels/channel-form";
import "./pages.css";
import { PagedTable } from "./parts/item-table";

export default function ChannelsPage() {
  const { isAdmin } = useSession();
  const [params, setParams] = useUrlState();
  const cursor = params.get("cursor") ?? undefined;
  const creating = isAdmin && params.get("new") === "1";
  const list = useChannels(cursor);
  const create = useCreateChannel();
  const [created, setCreated] = useState<Channel | undefined>();
  const channels = list.data?.channels ?? [];

  return (
    <Page
      title="Channels"
      actions={
        isAdmin && !creating ? (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              create.reset();
              setCreated(undefined);
              setParams({ new: "1" });
            }}
          >
            New channel
          </button>
        ) : null
      }
    >
      {creating ? (
        <Section title="New channel">
          <ChannelForm
            submitLabel="Create"
            pending={create.isPending}
            error={create.error}
            onSubmit={({ name, channel_type, config }) =>
              create.mutate(
                { name, channel_type, config },
                {
                  onSuccess: (c) => {
                    setCreated(c);
                    setParams({ new: undefined }, { replace: true });
                  },
                },
              )
            }
            extra={
              <button type="button" className="btn" onClick={() => setParams({ new: undefined })}>
                Cancel
              </button>
            }
          />
        </Section>
      ) : null}
      {created ? <CreatedNotice channel={created} /> : null}
      <Section title="All channels">
        <QueryStatus query={list}>
          <PagedTable
            label="Channels"
            columns={["Name", "Type", "Target", "Status", "Updated"]}
            items={channels}
            empty={
              <EmptyState title="No channels yet.">
                {isAdmin ? "Add one to have events delivered." : "An admin can add one."}
              </EmptyState>
            }
            cursor={cursor}
            nextCursor={list.data?.has_more ? list.data.next_cursor : undefined}
            onCursor={(c) => setParams({ cursor: c })}
          >
            {(c) => (
              <tr key={c.id}>
                <td>
                  <Link href={`/channels/${encodeURIComponent(c.id)}`}>{c.name}</Link>
                </td>
                <td>{c.channel_type}</td>
                <td className="mono truncate">{targetOf(c)}</td>
                <td>
                  {c.enabled ? (
                    <Badge tone="ok">enabled</Badge>
                  ) : (
                    <Badge tone="danger" title={c.disabled_reason ?? undefined}>
                      disabled
                    </Badge>
                  )}
                </td>
                <td>
                  <Time value={c.updated_at * 1000} />
                </td>
              </tr>
            )}
          </PagedTable>
        </QueryStatus>
      </Section>
    </Page>
  );
}

/** Where a channel sends, as the API shows it (credential-bearing URLs come back masked). */
export function targetOf(c: Channel): string {
  const cfg = c.config;
  const s = (v: unknown) => (typeof v === "string" ? v : "");
  if (c.channel_type === "webhook") return s(cfg.url);
  if (c.channel_type === "ntfy") return `${s(cfg.server_url)}/${s(cfg.topic)}`;
  return s(cfg.webhook_url);
}

function CreatedNotice({ channel }: { channel: Channel }) {
  const secret = typeof channel.config.secret === "string" ? channel.config.secret : "";
  // A generated secret comes back in clear in the create answer only; a stored one is masked.
  const generated = secret !== "" && !secret.includes("*");
  return (
    <Banner kind="success">
      Created channel <Link href={`/channels/${encodeURIComponent(channel.id)}`}>{channel.name}</Link>.
      {generated ? (
        <>
          {" "}
          Its signing secret, shown this once — copy it to the receiver now: <code className="mono">{secret}</code>
        </>
      ) : null}
    </Banner>
  );
}
