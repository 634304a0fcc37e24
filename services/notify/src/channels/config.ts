import { randomBytes } from "node:crypto";
import { z } from "zod";
import { Severities, type Severity } from "@orch/contracts";
import { invalid } from "@orch/kit";

/** Per-type channel configuration: validation, the split into public fields and credentials, masking. */
export const CHANNEL_TYPES = ["webhook", "discord", "slack", "ntfy"] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];
export const isChannelType = (s: string): s is ChannelType => (CHANNEL_TYPES as readonly string[]).includes(s);

export const MASK = "********";
export const DEFAULT_NTFY_SERVER = "https://ntfy.sh";

const httpUrl = z
  .string()
  .max(2048)
  .refine((s) => {
    try {
      const u = new URL(s);
      return (
        (u.protocol === "http:" || u.protocol === "https:") &&
        u.hostname !== "" &&
        u.username === "" &&
        u.password === ""
      );
    } catch {
      return false;
    }
  }, "must be an http(s) URL without user:password");

// Headers we set ourselves (or that would corrupt the request) cannot be overridden.
const RESERVED_HEADERS =
  /^(host|content-length|content-type|transfer-encoding|connection|webhook-id|webhook-timestamp|webhook-signature)$/i;
const headerName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, "must be an HTTP header name")
  .refine((n) => !RESERVED_HEADERS.test(n), "is set by the notify service and cannot be overridden");
// Latin-1 without control characters: what an HTTP header value can carry.
const headerValue = z
  .string()
  .max(4096)
  .regex(/^[\t\x20-\x7e\x80-\xff]*$/, "must not contain control characters");

/** Standard Webhooks secret: `whsec_` + base64 of 24..64 random bytes. */
const whsec = z.string().refine((s) => {
  const m = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(s);
  if (!m) return false;
  const n = Buffer.from(m[1]!, "base64").length;
  return n >= 24 && n <= 64;
}, "must be whsec_ followed by base64 of 24 to 64 bytes");

const common = {
  /** Deliver events at or above this severity (default warning). */
  min_severity: z.enum(Severities).optional(),
  /** Deliver only event types matching one of these prefixes (at a dot boundary). */
  event_types: z
    .array(z.string().regex(/^[a-z0-9_]+(\.[a-z0-9_]+)*$/, "must be a dotted event type or prefix"))
    .min(1)
    .max(50)
    .optional(),
};

export const configSchemas = {
  webhook: z.strictObject({
    url: httpUrl,
    secret: whsec.optional(),
    headers: z.record(headerName, headerValue).optional(),
    ...common,
  }),
  discord: z.strictObject({ webhook_url: httpUrl, ...common }),
  slack: z.strictObject({ webhook_url: httpUrl, ...common }),
  ntfy: z.strictObject({
    server_url: httpUrl.optional(),
    topic: z.string().regex(/^[-_A-Za-z0-9]{1,64}$/, "must be 1-64 characters of A-Z, a-z, 0-9, '-' or '_'"),
    token: z
      .string()
      .min(1)
      .max(512)
      .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces")
      .optional(),
    priority: z.number().int().min(1).max(5).optional(),
    ...common,
  }),
} as const;

export type ChannelConfig = { [T in ChannelType]: z.infer<(typeof configSchemas)[T]> }[ChannelType];

/** Which config keys hold credentials, per type; they live in the encrypted `credentials` column. */
export const CREDENTIAL_KEYS: Record<ChannelType, readonly string[]> = {
  webhook: ["secret", "headers"],
  discord: ["webhook_url"],
  slack: ["webhook_url"],
  ntfy: ["token"],
};

export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

function maskUrl(s: string): string {
  try {
    const u = new URL(s);
    return `${u.protocol}//${u.host}/${MASK}`;
  } catch {
    return MASK;
  }
}

/** The masked form of one credential value, as responses show it. */
function maskValue(key: string, v: unknown): unknown {
  if (key === "webhook_url") return maskUrl(String(v));
  if (key === "secret") return `whsec_${MASK}`;
  if (key === "headers" && v && typeof v === "object") return Object.fromEntries(Object.keys(v).map((k) => [k, MASK]));
  return MASK;
}

export interface SplitConfig {
  /** Non-secret fields, stored as jsonb and returned as they are. */
  public: Record<string, unknown>;
  /** Secret fields, stored sealed and only ever returned masked. */
  credentials: Record<string, unknown>;
  /** A webhook secret generated now (shown once in the response). */
  generatedSecret?: string;
}

function validate(type: ChannelType, raw: unknown): ChannelConfig {
  const r = configSchemas[type].safeParse(raw);
  if (!r.success) {
    const errors = r.error.issues.map((i) => {
      const path = [...i.path.map(String), ...(i.code === "unrecognized_keys" ? [i.keys[0] ?? ""] : [])].filter(
        Boolean,
      );
      return { location: "body", field: ["config", ...path].join("."), message: i.message };
    });
    const first = errors[0]!;
    throw invalid("invalid_config", `${type} config field '${first.field}': ${first.message}`, {
      field: first.field,
      errors,
    });
  }
  return r.data;
}

function split(type: ChannelType, cfg: Record<string, unknown>): SplitConfig {
  const pub: Record<string, unknown> = {};
  const creds: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(cfg)) {
    if (v === undefined) continue;
    (CREDENTIAL_KEYS[type].includes(k) ? creds : pub)[k] = v;
  }
  return { public: pub, credentials: creds };
}

/** Validates a new channel's config; a webhook without a secret gets a generated one. */
export function prepareCreate(type: ChannelType, raw: Record<string, unknown>): SplitConfig {
  const cfg = validate(type, raw) as Record<string, unknown>;
  const out = split(type, cfg);
  if (type === "webhook" && !out.credentials.secret) {
    out.generatedSecret = generateSecret();
    out.credentials.secret = out.generatedSecret;
  }
  return out;
}

const isMasked = (key: string, sent: unknown, stored: unknown) =>
  sent === MASK || (stored !== undefined && JSON.stringify(sent) === JSON.stringify(maskValue(key, stored)));

/**
 * Validates a replacement config. Credentials that are omitted or sent back masked keep their
 * stored value (so a GET → edit → PUT round trip never wipes them); `null` removes an optional
 * credential, and `secret: null` rotates a webhook secret.
 */
export function prepareUpdate(
  type: ChannelType,
  raw: Record<string, unknown>,
  stored: Record<string, unknown>,
): SplitConfig {
  const merged: Record<string, unknown> = { ...raw };
  let rotate = false;
  for (const key of CREDENTIAL_KEYS[type]) {
    const sent = raw[key];
    const old = stored[key];
    if (sent === undefined) {
      if (old !== undefined) merged[key] = old;
    } else if (sent === null) {
      delete merged[key];
      if (key === "secret") rotate = true;
    } else if (key === "headers" && sent && typeof sent === "object" && !Array.isArray(sent)) {
      const oldHeaders = (old ?? {}) as Record<string, unknown>;
      merged[key] = Object.fromEntries(
        Object.entries(sent).map(([h, v]) => [h, v === MASK && oldHeaders[h] !== undefined ? oldHeaders[h] : v]),
      );
    } else if (isMasked(key, sent, old)) {
      if (old === undefined)
        throw invalid(
          "invalid_config",
          `config field 'config.${key}' is masked but no value is stored; send the real value`,
          { field: `config.${key}` },
        );
      merged[key] = old;
    }
  }
  const cfg = validate(type, merged) as Record<string, unknown>;
  const out = split(type, cfg);
  if (type === "webhook" && (rotate || !out.credentials.secret)) {
    out.generatedSecret = generateSecret();
    out.credentials.secret = out.generatedSecret;
  }
  return out;
}

/** The config as responses show it: public fields plus masked credentials (a just-generated secret in clear). */
export function viewConfig(
  type: ChannelType,
  pub: Record<string, unknown>,
  creds: Record<string, unknown>,
  generatedSecret?: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...pub };
  if (type === "ntfy" && out.server_url === undefined) out.server_url = DEFAULT_NTFY_SERVER;
  for (const [k, v] of Object.entries(creds)) out[k] = maskValue(k, v);
  if (generatedSecret) out.secret = generatedSecret;
  return out;
}

const RANK: Record<Severity, number> = { info: 0, warning: 1, error: 2, critical: 3 };
export const severityRank = (s: string): number => RANK[s as Severity] ?? 0;
export const atLeast = (sev: string, min: string): boolean => severityRank(sev) >= severityRank(min);

/** Prefix match at a dot boundary: `agent` matches `agent.approved`, not `agents.x`. */
export function matchesType(eventType: string, prefixes: readonly string[] | undefined): boolean {
  if (!prefixes || prefixes.length === 0) return true;
  return prefixes.some((p) => eventType === p || eventType.startsWith(`${p}.`));
}

/** Whether a channel with this public config wants the event. */
export function channelWants(pub: Record<string, unknown>, eventType: string, severity: string): boolean {
  const min = typeof pub.min_severity === "string" ? pub.min_severity : "warning";
  return atLeast(severity, min) && matchesType(eventType, pub.event_types as string[] | undefined);
}
