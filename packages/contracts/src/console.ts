/**
 * Names the web console and the gateway must agree on: the session cookies, the CSRF header, and
 * the login link's shape. Both sides import them from here (`@orch/contracts/console`).
 */

/** HttpOnly cookie holding the opaque console session token (`__Host-` prefixed over https). */
export const SESSION_COOKIE = "orch_session";
/** The `__Host-` variant used when the public URL is https (Secure, Path=/, no Domain). */
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;
/** Readable (not HttpOnly) cookie carrying the session's CSRF value for the console's script. */
export const CSRF_COOKIE = "orch_csrf";
/** Header every state-changing cookie-authenticated request must carry, equal to the CSRF cookie. */
export const CSRF_HEADER = "x-orch-csrf";
/** Lifetime of a one-time login code, seconds. */
export const LOGIN_CODE_TTL_SECONDS = 60;
/** The console page that exchanges a login code; the code travels in the fragment (`#code=`), never to servers. */
export const LOGIN_PATH = "/login";

/** The login link `orchctl console` prints. */
export function loginLink(publicUrl: string, code: string): string {
  return `${publicUrl.replace(/\/+$/, "")}${LOGIN_PATH}#code=${encodeURIComponent(code)}`;
}
