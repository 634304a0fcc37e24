/**
 * The new-secret form's restriction and expiry fields, as the API wants them. Pure, so the rules
 * (what a "k=v" list is, what an expiry in the past is) are unit-tested without a browser.
 */
import { checkTagKey, checkTagValue } from "../../lib/rules";

export type ParsedTags = { ok: true; tags: Record<string, string> } | { ok: false; message: string };

/** "env=prod, role=web" (commas or new lines) → {env: "prod", role: "web"}; blank → {}. */
export function parseTags(text: string): ParsedTags {
  const tags: Record<string, string> = {};
  for (const raw of text.split(/[,\n]/)) {
    const part = raw.trim();
    if (part === "") continue;
    const eq = part.indexOf("=");
    if (eq < 0) return { ok: false, message: `"${part}" is not key=value` };
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    const k = checkTagKey(key);
    if (k) return { ok: false, message: `Tag key "${key}" ${k.message.replace(/^\(tag key\) /, "")}` };
    const v = checkTagValue(value);
    if (v) return { ok: false, message: `Tag value of ${key} ${v.message.replace(/^\(tag value\) /, "")}` };
    if (key in tags) return { ok: false, message: `Tag key "${key}" is given twice` };
    tags[key] = value;
  }
  return { ok: true, tags };
}

/** The API's restriction: null (any approved agent) when neither agents nor tags are given. */
export function restrictionOf(
  nodeIds: readonly string[],
  tags: Record<string, string>,
): { node_ids: string[]; tags: Record<string, string> } | null {
  if (nodeIds.length === 0 && Object.keys(tags).length === 0) return null;
  return { node_ids: [...nodeIds], tags: { ...tags } };
}

export type ParsedExpiry = { ok: true; expiresAt: string | null } | { ok: false; message: string };

/** A datetime-local value (local time) → RFC 3339 in UTC; blank → never expires; the past is refused. */
export function parseExpiry(local: string, nowMs: number): ParsedExpiry {
  if (local.trim() === "") return { ok: true, expiresAt: null };
  const ms = new Date(local).getTime();
  if (!Number.isFinite(ms)) return { ok: false, message: "Expires is not a date and time" };
  if (ms <= nowMs) return { ok: false, message: "Expires must be in the future" };
  return { ok: true, expiresAt: new Date(ms).toISOString() };
}
