import type { ChannelType } from "../channels/config.js";
import { DEFAULT_NTFY_SERVER } from "../channels/config.js";
import type { EventJson } from "../events.js";
import type { OutgoingRequest } from "./http.js";
import { signWebhook } from "./signing.js";

/** Each channel type's native payload, built from the audit event at send time. */

export const SEVERITY_COLOR: Record<string, number> = {
  info: 0x3498db,
  warning: 0xf1c40f,
  error: 0xe74c3c,
  critical: 0x992d22,
};
export const NTFY_PRIORITY: Record<string, number> = { info: 3, warning: 4, error: 5, critical: 5 };
const EMOJI: Record<string, string> = {
  info: "information_source",
  warning: "warning",
  error: "rotating_light",
  critical: "rotating_light",
};

const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);
const refText = (r: { id: string; name: string; type: string }) =>
  r.name && r.name !== r.id ? `${r.name} (${r.type} ${r.id})` : `${r.id} (${r.type})`;
// Slack mrkdwn control characters.
const slackEscape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
// Header values must be Latin-1; titles are built from ASCII-safe parts anyway.
const headerSafe = (s: string) => s.replace(/[^\x20-\x7e]/g, "?");
const title = (ev: EventJson) => `[${ev.severity.toUpperCase()}] ${ev.event_type}`;

export function slackPayload(ev: EventJson): Record<string, unknown> {
  return {
    text: clip(`${title(ev)}: ${ev.summary}`, 3000),
    blocks: [
      {
        type: "section",
        text: { type: "mrkdwn", text: clip(`*${slackEscape(title(ev))}*\n${slackEscape(ev.summary)}`, 3000) },
      },
      {
        type: "section",
        fields: [
          { type: "mrkdwn", text: `*Actor*\n${clip(slackEscape(refText(ev.actor)), 1900)}` },
          { type: "mrkdwn", text: `*Target*\n${clip(slackEscape(refText(ev.target)), 1900)}` },
          { type: "mrkdwn", text: `*Time*\n${ev.timestamp}` },
          { type: "mrkdwn", text: `*Event*\n${ev.id}` },
        ],
      },
    ],
  };
}

export function discordPayload(ev: EventJson): Record<string, unknown> {
  return {
    content: clip(`**${title(ev)}** ${ev.summary}`, 2000),
    embeds: [
      {
        title: clip(ev.event_type, 256),
        description: clip(ev.summary, 4096),
        color: SEVERITY_COLOR[ev.severity] ?? SEVERITY_COLOR.info,
        timestamp: ev.timestamp,
        fields: [
          { name: "Severity", value: ev.severity, inline: true },
          { name: "Actor", value: clip(refText(ev.actor), 1024), inline: true },
          { name: "Target", value: clip(refText(ev.target), 1024), inline: true },
        ],
        footer: { text: `event ${ev.id}` },
      },
    ],
    // Summaries are data, not commands: never ping @everyone or roles from them.
    allowed_mentions: { parse: [] },
  };
}

/** The HTTP request a delivery makes. `now` is Unix ms (webhook-timestamp). */
export function render(
  type: ChannelType,
  pub: Record<string, unknown>,
  creds: Record<string, unknown>,
  ev: EventJson,
  deliveryId: string,
  now: number,
): OutgoingRequest {
  switch (type) {
    case "slack":
      return {
        url: String(creds.webhook_url),
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(slackPayload(ev)),
      };
    case "discord":
      return {
        url: String(creds.webhook_url),
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(discordPayload(ev)),
      };
    case "ntfy": {
      const server = String(pub.server_url ?? DEFAULT_NTFY_SERVER).replace(/\/+$/, "");
      const headers: Record<string, string> = {
        "content-type": "text/plain; charset=utf-8",
        Title: headerSafe(title(ev)),
        Priority: String(typeof pub.priority === "number" ? pub.priority : (NTFY_PRIORITY[ev.severity] ?? 3)),
        Tags: headerSafe(`${EMOJI[ev.severity] ?? "bell"},${ev.event_type}`),
      };
      if (typeof creds.token === "string") headers.Authorization = `Bearer ${creds.token}`;
      return { url: `${server}/${String(pub.topic)}`, method: "POST", headers, body: clip(ev.summary, 4000) };
    }
    case "webhook": {
      const body = JSON.stringify(ev);
      const custom = (creds.headers ?? {}) as Record<string, string>;
      return {
        url: String(pub.url),
        method: "POST",
        headers: {
          ...custom,
          "content-type": "application/json",
          ...signWebhook(String(creds.secret), deliveryId, Math.floor(now / 1000), body),
        },
        body,
      };
    }
  }
}
