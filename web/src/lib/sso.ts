/**
 * What the sign-in page says after a failed single sign-on: the gateway sends the browser back to
 * `/login?sso_error=<problem code>`, and the page shows the error catalogue's meaning of the code
 * (the same text as docs/errors.md). Pure, unit-tested.
 */
import { ApiError } from "@orch/client";
import { ERROR_CATALOGUE, isErrorReason } from "@orch/contracts/error-catalogue";

const UNKNOWN = "Single sign-on did not complete. Try again, or ask an admin to look at the audit log.";

/** The message for a `sso_error` code; unknown or malformed codes get a generic one (the URL is anyone's). */
export function ssoErrorMessage(code: string): string {
  return isErrorReason(code) ? ERROR_CATALOGUE[code].meaning : UNKNOWN;
}

/** The failed sign-in the URL's `?sso_error=` names, as an error the page's ProblemMessage shows; else undefined. */
export function ssoErrorOf(search: string): Error | undefined {
  const code = new URLSearchParams(search).get("sso_error");
  if (!code) return undefined;
  if (!isErrorReason(code)) return new Error(UNKNOWN);
  return new ApiError({
    type: "about:blank",
    title: "Single sign-on failed",
    status: ERROR_CATALOGUE[code].status,
    detail: ssoErrorMessage(code),
    code,
  });
}

/**
 * Where an operator came from, for the Operators page: "key" (added by an admin) or "sso: <provider>
 * (rule <name>)"; undefined when the API does not say.
 */
export function operatorSource(o: object): string | undefined {
  const { source, sso_rule } = o as { source?: unknown; sso_rule?: unknown };
  if (typeof source !== "string" || !source) return undefined;
  if (!source.startsWith("sso:")) return source;
  const rule = typeof sso_rule === "string" && sso_rule ? ` (rule ${sso_rule})` : "";
  return `sso: ${source.slice(4)}${rule}`;
}
