/**
 * The assignment form's checks, the API's own rules (names from the contracts, the selector from
 * its parser), so Create/Save is only enabled for what the gateway would accept. Pure: unit-tested.
 */
import { checkName } from "@orch/contracts/rules/names";
import { checkSelector } from "../../lib/selector";

export interface AssignmentDraft {
  name: string;
  selector: string;
  modules: readonly string[];
  description: string;
}

export interface DraftCheck {
  /** Shown under the field; blank fields are not yet an error. */
  name?: string;
  modules?: string;
  /** The selector parses and is not blank. */
  selectorOk: boolean;
  /** The selector as sent (trimmed), when it parses. */
  selector?: string;
  /** Everything is in place to send. */
  ready: boolean;
}

export function checkDraft(d: AssignmentDraft, opts: { touched?: boolean } = {}): DraftCheck {
  const name = d.name.trim();
  const nameViolation = name === "" ? null : checkName(name);
  const sel = checkSelector(d.selector);
  const selectorOk = sel.ok && sel.selector !== "";
  const out: DraftCheck = { selectorOk, ready: false };
  if (nameViolation) out.name = `Name ${nameViolation.message}`;
  else if (name === "" && opts.touched) out.name = "Name is required";
  if (d.modules.length === 0 && opts.touched) out.modules = "Choose at least one module";
  if (sel.ok && sel.selector !== "") out.selector = sel.selector;
  out.ready = selectorOk && name !== "" && !nameViolation && d.modules.length > 0 && d.description.length <= 1000;
  return out;
}

/** "matches 1 agent" / "matches 3 agents". */
export function matchesText(n: number): string {
  return `matches ${n} agent${n === 1 ? "" : "s"}`;
}
