import { isMap, isPair, isScalar, type Node } from "yaml";
import { OrchError } from "@orch/kit";
import type { SourceFileErrorRow } from "../db/sources.js";
import { checkValueSet, type ValueSetInput } from "./define.js";
import { parseYaml, valuesAt, type ParsedValues } from "./parse.js";

/** A value set a git source's tree defines: `values/<name>.yaml`. */
export interface TreeValueSet extends ValueSetInput {
  file: string;
  parsed: ParsedValues;
}

const KEYS = new Set(["selector", "priority", "description", "values"]);

/**
 * One `values/<name>.yaml`: `selector`, `priority`, `description` and `values` (the map). The
 * checks are the API's (PutValueSet), so a file is refused exactly when the same request would be;
 * lines of origins refer to the file.
 */
export function readValueFile(
  file: string,
  name: string,
  content: string,
): { set?: TreeValueSet; errors: SourceFileErrorRow[] } {
  const fail = (err: unknown) => {
    if (!(err instanceof OrchError)) throw err;
    const line = typeof err.details.line === "number" ? err.details.line : 0;
    return { errors: [{ file, line, column: 0, code: err.reason, message: err.message }] };
  };
  try {
    const { doc, loc } = parseYaml(content);
    const root = doc.contents as Node | null;
    if (!isMap(root)) throw loc.error("invalid_values", root, "", "must be a map with selector, priority, values");
    const fields = new Map<string, Node | null>();
    for (const pair of root.items) {
      const key = isPair(pair) && isScalar(pair.key) ? String(pair.key.value) : "";
      if (!KEYS.has(key)) throw loc.error("invalid_values", pair.key as Node, key, `unknown field '${key}'`);
      fields.set(key, pair.value as Node | null);
    }
    const scalar = (key: string): unknown => {
      const n = fields.get(key);
      if (n === undefined || n === null) return undefined;
      if (!isScalar(n)) throw loc.error("invalid_values", n, key, "must be a single value");
      return n.value;
    };
    const selector = scalar("selector") ?? "";
    const priority = scalar("priority") ?? 0;
    const description = scalar("description") ?? "";
    if (typeof selector !== "string")
      throw loc.error("invalid_values", fields.get("selector"), "selector", "must be a string");
    if (typeof priority !== "number")
      throw loc.error("invalid_values", fields.get("priority"), "priority", "must be an integer");
    if (typeof description !== "string")
      throw loc.error("invalid_values", fields.get("description"), "description", "must be a string");
    let def: ValueSetInput;
    try {
      def = checkValueSet({ name, selector, priority, description });
    } catch (err) {
      // The field's own line: the API's error names only the field.
      const field = err instanceof OrchError && typeof err.details.field === "string" ? err.details.field : "";
      const at = fields.get(field) ?? (root as Node);
      throw err instanceof OrchError ? loc.error(err.reason as "invalid_values", at, field, err.message) : err;
    }
    const parsed = valuesAt(doc, loc, fields.get("values"), content);
    return { set: { ...def, file, parsed }, errors: [] };
  } catch (err) {
    return fail(err);
  }
}
