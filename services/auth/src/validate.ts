import { parseSelector, SelectorError } from "@orch/contracts";
import { invalid } from "@orch/kit";

// Control characters other than whitespace have no place in a selector (and NUL breaks Postgres).
const CONTROL_RE = /[\x00-\x08\x0e-\x1f\x7f]/;

/**
 * The stored form of an agent selector, or null for unscoped. Whitespace only separates terms, so
 * it is folded to single spaces: the value then travels as a bus header unchanged. Admins are
 * never scoped (docs/access.md): a selector on an admin would suggest a limit nobody enforces.
 */
export function agentSelector(text: string, role: string): string | null {
  const field = { field: "agent_selector" };
  if (CONTROL_RE.test(text)) throw invalid("invalid_selector", "agent_selector contains a control character", field);
  const folded = text.replace(/\s+/g, " ").trim();
  if (folded === "") return null;
  // `||` joins a scope with granted selectors (contracts scope-union.ts): a stored scope never holds it.
  if (folded.includes("||")) throw invalid("invalid_selector", "agent_selector may not contain '||'", field);
  if (role === "admin") {
    throw invalid(
      "admin_cannot_be_scoped",
      "admins reach every agent; an agent selector applies to the operator role only",
      field,
    );
  }
  try {
    parseSelector(folded);
  } catch (err) {
    if (err instanceof SelectorError) {
      throw invalid("invalid_selector", `agent_selector: ${err.message}`, { ...field, position: err.position });
    }
    throw err;
  }
  return folded;
}
