import { createHash } from "node:crypto";
import { checkValuePriority, DEFAULTS_VALUE_SET } from "@orch/contracts";
import { invalid } from "@orch/kit";
import { checkDescription, checkSelector, validName } from "../validate.js";
import type { ValueSetRow } from "./tables.js";
import type { ParsedValues } from "./parse.js";

/** A set's definition as the API and a git source's file give it; checked by the same function. */
export interface ValueSetInput {
  name: string;
  selector: string;
  priority: number;
  description: string;
}

/**
 * The rules of a set besides its values: `defaults` has no selector and priority 0 (it is always the
 * lowest layer); every other set has a selector (use `*` for every agent) and a priority.
 */
export function checkValueSet(def: ValueSetInput): ValueSetInput {
  const name = validName(def.name, "name", "value set");
  const selector = def.selector.trim();
  if (name === DEFAULTS_VALUE_SET) {
    if (selector !== "")
      throw invalid("invalid_values", "the defaults set applies to every agent: it takes no selector", {
        field: "selector",
      });
    if (def.priority !== 0)
      throw invalid("invalid_values", "the defaults set is always the lowest layer: it takes no priority", {
        field: "priority",
      });
  } else {
    if (selector === "")
      throw invalid("invalid_values", "selector is required (use '*' for every agent, or name the set defaults)", {
        field: "selector",
      });
    checkSelector(selector);
    const bad = checkValuePriority(def.priority);
    if (bad) throw invalid(bad.reason, `priority ${bad.message}`, { field: "priority" });
  }
  checkDescription(def.description);
  return { name, selector, priority: def.priority, description: def.description };
}

/** The row a checked set and its parsed values are stored as. */
export function valueSetRow(
  def: ValueSetInput,
  parsed: ParsedValues,
  by: { id: string; name: string; at: number },
  source: { source: string | null; commit: string } = { source: null, commit: "" },
): ValueSetRow {
  return {
    ...def,
    values: parsed.values,
    lines: parsed.lines,
    content: parsed.content,
    sha256: createHash("sha256").update(parsed.content).digest("hex"),
    key_count: Object.keys(parsed.lines).length,
    updated_at: by.at,
    updated_by: by.id,
    updated_by_name: by.name,
    source: source.source,
    source_commit: source.commit,
  };
}
