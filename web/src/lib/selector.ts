/**
 * The assignment selector grammar, shared with the gateway so the console refuses exactly what the
 * API would refuse (and sends no request while the text is invalid).
 */
import { parseSelector, SELECTOR_MAX_LENGTH, SelectorError } from "@orch/contracts/selector";

export { parseSelector, SELECTOR_MAX_LENGTH, SelectorError };

export type SelectorCheck = { ok: true; selector: string } | { ok: false; message: string; position: number };

/** Blank means "no selector" (every agent in scope); otherwise the trimmed text when it parses. */
export function checkSelector(text: string): SelectorCheck {
  if (text.trim() === "") return { ok: true, selector: "" };
  try {
    return { ok: true, selector: parseSelector(text).source };
  } catch (err) {
    if (err instanceof SelectorError) return { ok: false, message: err.message, position: err.position };
    return { ok: false, message: err instanceof Error ? err.message : String(err), position: 0 };
  }
}
