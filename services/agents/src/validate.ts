import {
  checkAgentName,
  parseSelector,
  SelectorError,
  type Selector,
  checkTagKey as tagKeyRule,
  checkTags as tagsRule,
  checkTagValue as tagValueRule,
  type Violation,
} from "@orch/contracts";
import { invalid } from "@orch/kit";

export { MAX_TAGS } from "@orch/contracts";

// The rules live in @orch/contracts so the gateway refuses exactly what this service refuses.

const refuse = (v: Violation, field: string) => invalid(v.reason, `${field} ${v.message}`, { field });

export function checkTagKey(key: string, field = "key"): void {
  const v = tagKeyRule(key);
  if (v) throw refuse(v, field);
}

export function checkTagValue(value: string, field = "value"): void {
  const v = tagValueRule(value);
  if (v) throw refuse(v, field);
}

export function checkTags(tags: Record<string, string>): void {
  const v = tagsRule(tags);
  if (v) throw refuse(v, v.field);
}

export function checkName(name: string): void {
  const v = checkAgentName(name);
  if (v) throw refuse(v, "name");
}

/** A request's selector filter; null when it narrows nothing (empty or `*`). */
export function checkSelector(text: string, field = "selector"): Selector | null {
  if (!text.trim()) return null;
  let sel: Selector;
  try {
    sel = parseSelector(text);
  } catch (err) {
    if (err instanceof SelectorError)
      throw invalid("invalid_selector", `${field}: ${err.message}`, { field, position: err.position });
    throw err;
  }
  return sel.all ? null : sel;
}
