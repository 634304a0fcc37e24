import { checkTagKey, checkTagValue, TAG_KEY_RULE, TAG_VALUE_RULE } from "./agents.js";
import { NODE_ID_RE } from "./ids.js";
import type { Violation } from "./violation.js";

// Messages describe the rule and never repeat the input: a secret value must not come back in an error.

export const SECRET_NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;
export const SECRET_NAME_RULE = "1-128 characters of A-Z, a-z, 0-9, '_', '.' and '-' (not '.' or '..')";
export const SECRET_VALUE_MAX_BYTES = 64 * 1024;
export const SECRET_DESCRIPTION_MAX = 1024;
export const RESTRICTION_MAX_NODE_IDS = 1000;
export const RESTRICTION_MAX_TAGS = 100;

export function checkSecretName(name: string): Violation | null {
  // "." and ".." cannot be addressed in a URL path (clients normalise them away).
  return SECRET_NAME_RE.test(name) && name !== "." && name !== ".."
    ? null
    : { reason: "invalid_name", message: `must be ${SECRET_NAME_RULE}` };
}

export function checkSecretValue(value: string): Violation | null {
  if (value.length === 0) return { reason: "invalid_value", message: "must not be empty" };
  // The bus encodes strings as UTF-8, which would silently replace a lone surrogate.
  if (/\p{Cs}/u.test(value)) return { reason: "invalid_value", message: "must be well-formed Unicode text" };
  if (Buffer.byteLength(value, "utf8") > SECRET_VALUE_MAX_BYTES)
    return { reason: "value_too_large", message: `must be at most ${SECRET_VALUE_MAX_BYTES} bytes of UTF-8` };
  return null;
}

/** Counted in characters (code points); empty means none. */
export function checkSecretDescription(d: string): Violation | null {
  return [...d].length <= SECRET_DESCRIPTION_MAX
    ? null
    : { reason: "invalid_description", message: `must be at most ${SECRET_DESCRIPTION_MAX} characters` };
}

/**
 * Who may receive a secret: node ids (any case; stored lowercase) and tags an agent can carry, so
 * the same tag rules as agents. An empty restriction is refused: "no restriction" is spelled null,
 * so nobody widens access by accident. `field` is the dotted path under `restriction`.
 */
export function checkRestriction(r: {
  nodeIds: readonly string[];
  tags: Readonly<Record<string, string>>;
}): (Violation & { field: string }) | null {
  const bad = (field: string, message: string) => ({ reason: "invalid_restriction" as const, message, field });
  if (r.nodeIds.length > RESTRICTION_MAX_NODE_IDS)
    return bad("restriction.node_ids", `must list at most ${RESTRICTION_MAX_NODE_IDS} node ids`);
  const i = r.nodeIds.findIndex((id) => !NODE_ID_RE.test(id.toLowerCase()));
  if (i >= 0) return bad(`restriction.node_ids.${i}`, "must be a node id (32 hex characters)");
  const keys = Object.keys(r.tags);
  if (keys.length > RESTRICTION_MAX_TAGS)
    return bad("restriction.tags", `must list at most ${RESTRICTION_MAX_TAGS} tags`);
  for (const k of [...keys].sort()) {
    if (checkTagKey(k)) return bad(`restriction.tags.${k}`, `key must be ${TAG_KEY_RULE}`);
    if (checkTagValue(r.tags[k]!)) return bad(`restriction.tags.${k}`, `value must be ${TAG_VALUE_RULE}`);
  }
  if (r.nodeIds.length === 0 && keys.length === 0)
    return bad("restriction", "must list at least one node id or tag (send null for no restriction)");
  return null;
}
