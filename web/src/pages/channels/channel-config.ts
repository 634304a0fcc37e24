/**
 * A channel's form fields ↔ the API's `config`. Credentials (webhook secret and headers, Discord/Slack
 * webhook URLs, the ntfy token) come back masked; an edit that leaves such a field blank omits the key,
 * which the API reads as "keep the stored value" — the mask itself is never sent back as a value.
 */
import type { ChannelType } from "../../api/channels";

export const CHANNEL_TYPES: readonly ChannelType[] = ["webhook", "discord", "slack", "ntfy"];
export const SEVERITIES = ["info", "warning", "error", "critical"] as const;

/** Which config keys hold credentials, per type (as the notify service splits them). */
export const CREDENTIAL_KEYS: Record<ChannelType, readonly string[]> = {
  webhook: ["secret", "headers"],
  discord: ["webhook_url"],
  slack: ["webhook_url"],
  ntfy: ["token"],
};

export interface ChannelFields {
  url: string;
  webhookUrl: string;
  secret: string;
  /** Webhook: forget the stored secret and have a new one generated (shown once). */
  rotateSecret: boolean;
  /** "Name: value" per line; blank on edit keeps the stored headers. */
  headers: string;
  serverUrl: string;
  topic: string;
  token: string;
  priority: string;
  minSeverity: string;
  eventTypes: string;
}

export const emptyFields = (): ChannelFields => ({
  url: "",
  webhookUrl: "",
  secret: "",
  rotateSecret: false,
  headers: "",
  serverUrl: "",
  topic: "",
  token: "",
  priority: "",
  minSeverity: "",
  eventTypes: "",
});

const str = (v: unknown): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");

/** The form for an existing channel: its public fields filled in, every credential field blank. */
export function fieldsFrom(config: Record<string, unknown>): ChannelFields {
  return {
    ...emptyFields(),
    url: str(config.url),
    serverUrl: str(config.server_url),
    topic: str(config.topic),
    priority: str(config.priority),
    minSeverity: str(config.min_severity),
    eventTypes: Array.isArray(config.event_types) ? config.event_types.map(str).join(", ") : "",
  };
}

export type BuiltConfig = { ok: true; config: Record<string, unknown> } | { ok: false; field: string; message: string };

function parseHeaders(text: string): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const colon = line.indexOf(":");
    if (colon <= 0) return `"${line}" is not "Name: value"`;
    out[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return out;
}

/**
 * The `config` to send. `editing`: blank credential fields are left out (kept by the API). The API
 * validates everything again and names the field it refuses.
 */
export function buildConfig(type: ChannelType, f: ChannelFields, editing: boolean): BuiltConfig {
  const config: Record<string, unknown> = {};
  const credential = (key: string, value: string) => {
    if (value.trim() !== "") config[key] = value.trim();
  };
  switch (type) {
    case "webhook": {
      config.url = f.url.trim();
      if (editing && f.rotateSecret) config.secret = null;
      else credential("secret", f.secret);
      if (f.headers.trim() !== "") {
        const headers = parseHeaders(f.headers);
        if (typeof headers === "string") return { ok: false, field: "headers", message: headers };
        config.headers = headers;
      }
      break;
    }
    case "discord":
    case "slack":
      credential("webhook_url", f.webhookUrl);
      if (!editing && config.webhook_url === undefined)
        return { ok: false, field: "webhook_url", message: "Webhook URL is required" };
      break;
    case "ntfy": {
      if (f.serverUrl.trim() !== "") config.server_url = f.serverUrl.trim();
      config.topic = f.topic.trim();
      credential("token", f.token);
      if (f.priority.trim() !== "") {
        const p = Number(f.priority);
        if (!Number.isInteger(p) || p < 1 || p > 5)
          return { ok: false, field: "priority", message: "Priority is 1 to 5" };
        config.priority = p;
      }
      break;
    }
  }
  if (f.minSeverity) config.min_severity = f.minSeverity;
  const types = f.eventTypes
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  if (types.length > 0) config.event_types = types;
  return { ok: true, config };
}

/** The config as shown read-only: public fields and the API's masked credentials, in a stable order. */
export function configRows(config: Record<string, unknown>): Array<{ key: string; value: string }> {
  return Object.entries(config)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([key, v]) => ({
      key,
      value: Array.isArray(v)
        ? v.join(", ")
        : typeof v === "object"
          ? Object.entries(v as Record<string, unknown>)
              .map(([k, x]) => `${k}: ${str(x)}`)
              .join("; ")
          : str(v) || String(v),
    }))
    .sort((a, b) => a.key.localeCompare(b.key));
}

/** One line for the test result: what the receiver answered, or why nothing was delivered. */
export function testSummary(r: {
  delivered: boolean;
  status_code: number | null;
  error: string | null;
  response_snippet: string | null;
}): string {
  const answered = r.status_code !== null ? `the receiver answered ${r.status_code}` : "no answer";
  if (r.delivered) return `Delivered: ${answered}.`;
  const why = r.error ? ` — ${r.error}` : "";
  return `Not delivered: ${answered}${why}.`;
}
