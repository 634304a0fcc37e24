/** Notification channels, test sends and deliveries as table rows and fields (pure). */
import type { Channel, ChannelTest, DeliveryPage } from "@orch/client";
import { idsOnly, type OperatorNames } from "../operator-names.js";

/** Where a channel delivers: the webhook URL, or ntfy's server/topic. */
export const channelTarget = (c: Channel) =>
  String(
    c.config.url ??
      c.config.webhook_url ??
      (c.config.topic ? `${String(c.config.server_url ?? "")}/${String(c.config.topic)}` : ""),
  );

const minSeverity = (c: Channel) => c.config.min_severity ?? "warning";

export const CHANNEL_COLUMNS = ["NAME", "ID", "TYPE", "ENABLED", "MIN SEVERITY", "TARGET"];

export function channelRows(channels: readonly Channel[]): unknown[][] {
  return channels.map((c) => [
    c.name,
    c.id,
    c.channel_type,
    c.enabled ? "yes" : "no",
    minSeverity(c),
    channelTarget(c),
  ]);
}

/** "Added webhook channel ops, id …" before the fields of a channel just changed. */
export const channelVerbLine = (verb: string, c: Channel) => `${verb} ${c.channel_type} channel ${c.name}, id ${c.id}`;

export function channelFields(c: Channel, names: OperatorNames = idsOnly): [string, unknown][] {
  return [
    ["name", c.name],
    ["id", c.id],
    ["type", c.channel_type],
    ["enabled", c.enabled ? "yes" : `no (${c.disabled_reason ?? ""})`],
    ["target", channelTarget(c)],
    ["min_severity", minSeverity(c)],
    ["event_types", Array.isArray(c.config.event_types) ? c.config.event_types.join(",") : "all"],
    ["config", JSON.stringify(unmasked(c) ? { ...c.config, secret: "***" } : c.config)],
    ["created_at", new Date(c.created_at * 1000).toISOString()],
    ["created_by", names(c.created_by)],
  ];
}

/**
 * The server returns a webhook secret unmasked only in the answer that created or rotated it; that
 * is the one chance to show it. Null when the config holds no such secret.
 */
export function channelSecretLine(c: Channel): string | null {
  const secret = unmasked(c);
  return secret ? `webhook secret (shown once, store it now): ${secret}` : null;
}

/** The webhook secret when the server sent it whole; the config line then masks it (one showing is enough). */
function unmasked(c: Channel): string | null {
  const secret = c.config.secret;
  return typeof secret === "string" && secret.startsWith("whsec_") && !secret.includes("****") ? secret : null;
}

export function channelTestFields(r: ChannelTest): [string, unknown][] {
  return [
    ["delivered", r.delivered ? "yes" : "no"],
    ["status_code", r.status_code],
    ["response", r.response_snippet],
    ["error", r.error],
  ];
}

/** Why a test send did not deliver: the server's error, else the receiver's status. */
export function channelTestFailure(ref: string, r: ChannelTest): string {
  const why = r.error ?? (r.status_code ? `the receiver answered HTTP ${r.status_code}` : "no reason given");
  return `test notification through ${ref} was not delivered: ${why}`;
}

export const DELIVERY_COLUMNS = ["ID", "CREATED", "EVENT", "SEVERITY", "STATUS", "ATTEMPTS", "LAST"];

export function deliveryRows(deliveries: DeliveryPage["deliveries"]): unknown[][] {
  return deliveries.map((d) => [
    d.id,
    new Date(d.created_at_ms).toISOString(),
    d.event_type,
    d.severity,
    d.status,
    d.attempts,
    d.last_error ?? d.last_status_code,
  ]);
}
