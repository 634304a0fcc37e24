import type { ReasonFor } from "../error-catalogue.js";

/**
 * Why a value breaks a rule. `reason` is the stable snake_case code a service answers with (it
 * becomes the HTTP problem `code`); `message` is a predicate ("must be …") that reads after the
 * field's name and never repeats the input, which may be a secret.
 */
export interface Violation {
  reason: ReasonFor<"INVALID_ARGUMENT">;
  message: string;
}

/** A rule's checker: null when the value passes. */
export type RuleCheck<T = string> = (value: T) => Violation | null;
