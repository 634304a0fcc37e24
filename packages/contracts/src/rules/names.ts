import type { Violation } from "./violation.js";

/** Module, assignment and operator names. */
export const NAME_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;
export const NAME_RULE = "1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit";

/** Notification channel names: people read them, so capitals and spaces are allowed. */
export const CHANNEL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$/;
export const CHANNEL_NAME_RULE =
  "1-100 characters of letters, digits, space, '.', '_' or '-', starting with a letter or digit";

export function checkName(name: string): Violation | null {
  return NAME_RE.test(name) ? null : { reason: "invalid_request", message: `must be ${NAME_RULE}` };
}

export function checkChannelName(name: string): Violation | null {
  return CHANNEL_NAME_RE.test(name) ? null : { reason: "invalid_request", message: `must be ${CHANNEL_NAME_RULE}` };
}
