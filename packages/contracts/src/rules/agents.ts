import { NODE_ID_RE } from "./ids.js";
import type { Violation } from "./violation.js";

/** Agent names are DNS labels, given once at approval. */
export const AGENT_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const AGENT_NAME_RULE =
  "a DNS label: 1-63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit";

export const TAG_KEY_RE = /^[a-z0-9][a-z0-9._/-]{0,62}$/;
export const TAG_KEY_RULE = "1-63 characters of a-z, 0-9, '.', '_', '/' and '-', starting with a letter or digit";
export const TAG_VALUE_MAX = 255;
export const TAG_VALUE_RULE = `at most ${TAG_VALUE_MAX} printable characters`;
export const MAX_TAGS = 64;
/** Printable: no control characters (C0, DEL, C1); any other Unicode is fine. */
const PRINTABLE_RE = /^[^\p{Cc}]*$/u;

/** Required at approval; refused when it is not a DNS label or looks like a node id. */
/** Path segments the API uses under /api/v1/agents/ itself; an agent so named could not be read by name. */
export const RESERVED_AGENT_NAMES: ReadonlySet<string> = new Set(["summary"]);

export function checkAgentName(name: string | null | undefined): Violation | null {
  if (!name) return { reason: "name_required", message: "is required when approving" };
  if (!AGENT_NAME_RE.test(name)) return { reason: "invalid_name", message: `must be ${AGENT_NAME_RULE}` };
  // Agents are addressed by node id or name interchangeably; a name shaped like a node id would be ambiguous.
  if (NODE_ID_RE.test(name))
    return { reason: "invalid_name", message: "cannot be 32 hex digits (that is what node ids look like)" };
  if (RESERVED_AGENT_NAMES.has(name))
    return { reason: "invalid_name", message: `cannot be "${name}": /api/v1/agents/${name} is a route of its own` };
  return null;
}

/**
 * A reference to an agent: its node id or its approved name. Every node id is also a DNS label,
 * so one grammar covers both.
 */
export function checkAgentRef(ref: string): Violation | null {
  return AGENT_NAME_RE.test(ref) ? null : { reason: "invalid_request", message: "must be a node id or an agent name" };
}

export function checkTagKey(key: string): Violation | null {
  return TAG_KEY_RE.test(key) ? null : { reason: "invalid_tag_key", message: `(tag key) must be ${TAG_KEY_RULE}` };
}

export function checkTagValue(value: string): Violation | null {
  return [...value].length <= TAG_VALUE_MAX && PRINTABLE_RE.test(value)
    ? null
    : { reason: "invalid_tag_value", message: `(tag value) must be ${TAG_VALUE_RULE}` };
}

/** A whole tag map: the count first, then each key and value (field `tags.<key>`). */
export function checkTags(tags: Readonly<Record<string, string>>): (Violation & { field: string }) | null {
  const keys = Object.keys(tags);
  if (keys.length > MAX_TAGS)
    return { reason: "too_many_tags", message: `holds at most ${MAX_TAGS} tags`, field: "tags" };
  for (const k of keys) {
    const v = checkTagKey(k) ?? checkTagValue(tags[k]!);
    if (v) return { ...v, field: `tags.${k}` };
  }
  return null;
}
