import { NODE_ID_RE } from "@orch/contracts";
import { invalid } from "@orch/kit";

export const TAG_KEY_RE = /^[a-z0-9][a-z0-9._/-]{0,62}$/;
export const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** Printable: no control characters (C0, DEL, C1); any other Unicode is fine. */
const PRINTABLE_RE = /^[^\p{Cc}]*$/u;
export const MAX_TAG_VALUE = 255;
export const MAX_TAGS = 64;

export function checkTagKey(key: string, field = "key"): void {
  if (!TAG_KEY_RE.test(key)) {
    throw invalid(
      "invalid_tag_key",
      "tag keys are 1-63 characters of a-z, 0-9, '.', '_', '/' or '-', starting with a letter or digit",
      { field },
    );
  }
}

export function checkTagValue(value: string, field = "value"): void {
  if ([...value].length > MAX_TAG_VALUE || !PRINTABLE_RE.test(value)) {
    throw invalid("invalid_tag_value", `tag values are at most ${MAX_TAG_VALUE} printable characters`, { field });
  }
}

export function checkTags(tags: Record<string, string>): void {
  const keys = Object.keys(tags);
  if (keys.length > MAX_TAGS)
    throw invalid("too_many_tags", `an agent has at most ${MAX_TAGS} tags`, { field: "tags" });
  for (const k of keys) {
    checkTagKey(k, `tags.${k}`);
    checkTagValue(tags[k]!, `tags.${k}`);
  }
}

export function checkName(name: string): void {
  if (!name) throw invalid("name_required", "approving an agent requires a name", { field: "name" });
  if (!NAME_RE.test(name)) {
    throw invalid(
      "invalid_name",
      "names are 1-63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit",
      { field: "name" },
    );
  }
  // Agents are addressed by node id or name interchangeably; a name shaped like a node id would be ambiguous.
  if (NODE_ID_RE.test(name))
    throw invalid("invalid_name", "a name cannot be 32 hex digits (that is what node ids look like)", {
      field: "name",
    });
}
