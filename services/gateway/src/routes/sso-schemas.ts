import { z } from "zod";
import { LOGIN_PATH } from "@orch/contracts/console";

/**
 * Request shapes of the public single sign-on routes (/api/v1/auth/sso/…). The auth service checks
 * everything that matters (state, PKCE, nonce, the ID token); these bound sizes and keep the
 * console's landing page and the CLI's redirect where they belong.
 */

export const SsoProviderParams = z.object({ provider: z.string().min(1).max(64) });

export const LoginQuery = z.object({
  return_to: z
    .string()
    .max(2048)
    .optional()
    .describe("console path to land on after sign-in (same origin only; anything else is ignored)"),
});

/** A loopback redirect (RFC 8252 section 7.3): http to 127.0.0.1, [::1] or localhost, any port. */
export function isLoopbackRedirect(s: string): boolean {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  return (
    u.protocol === "http:" &&
    ["127.0.0.1", "[::1]", "localhost"].includes(u.hostname) &&
    !u.username &&
    !u.password &&
    !u.hash
  );
}

export const AuthorizeBody = z.object({
  redirect_uri: z
    .string()
    .max(2048)
    .refine(isLoopbackRedirect, "must be a loopback http URL (http://127.0.0.1:<port>/…), RFC 8252")
    .describe("where the provider sends the browser back: the CLI's loopback listener"),
});
export const AuthorizeOut = z.object({
  authorization_url: z.string().describe("open this in a browser"),
  state: z.string().describe("the redirect carries this state; anything else is not this sign-in"),
});

export const TokenBody = z.object({
  callback_url: z.string().min(1).max(8192).describe("the full URL the provider redirected the browser to"),
});
export const DeviceTokenBody = z.object({ device_id: z.string().min(1).max(200) });

/**
 * The console path to land on after a sign-in, or "" (the console's home): a same-origin absolute
 * path only (no scheme, no `//host`, no backslash or control characters), never the API or the
 * sign-in page itself. Anyone can craft the login link, so anything else is ignored.
 */
export function safeReturnTo(p: string | undefined): string {
  if (!p?.startsWith("/") || p.startsWith("//") || p.startsWith("/\\")) return "";
  for (const ch of p) if (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f || ch === "\\") return "";
  const path = p.split(/[?#]/)[0]!;
  if (path === "/api" || path.startsWith("/api/") || path === LOGIN_PATH) return "";
  return p;
}

/** The console's sign-in page showing a failed single sign-on's problem code. */
export const signInErrorPath = (code: string) => `${LOGIN_PATH}?sso_error=${encodeURIComponent(code)}`;

/** The logout_token of an OIDC Back-Channel Logout request (application/x-www-form-urlencoded). */
export function logoutTokenOf(body: Buffer): string {
  return new URLSearchParams(body.toString("utf8")).get("logout_token") ?? "";
}
