import type { FastifyReply, FastifyRequest } from "fastify";
import { CSRF_COOKIE, SECURE_SESSION_COOKIE, SESSION_COOKIE } from "@orch/contracts/console";
import type { Clock } from "@orch/kit";
import { bearerToken } from "../auth-cache.js";
import type { GatewayConfig } from "../config.js";
import { parseCookies, serializeCookie } from "./cookies.js";
import { csrfToken } from "./csrf.js";

export interface Credential {
  token: string;
  /** Cookie credentials are ambient (the browser sends them anywhere): they need the CSRF header. */
  via: "bearer" | "cookie";
}

type HttpConfig = Pick<GatewayConfig["http"], "public_url">;

/** Over https the session cookie is `__Host-` prefixed: Secure, host-only, Path=/ are then enforced by browsers. */
export const isSecure = (http: HttpConfig): boolean => http.public_url.startsWith("https:");
export const sessionCookieName = (http: HttpConfig): string =>
  isSecure(http) ? SECURE_SESSION_COOKIE : SESSION_COOKIE;

/** The one place a request's credential is found: a Bearer header wins over the console cookie. */
export function requestToken(req: FastifyRequest, http: HttpConfig): Credential | undefined {
  const bearer = bearerToken(req.headers.authorization);
  if (bearer) return { token: bearer, via: "bearer" };
  const cookie = parseCookies(req.headers.cookie).get(sessionCookieName(http));
  return cookie ? { token: cookie, via: "cookie" } : undefined;
}

/** Sets both console cookies for a new session; returns the CSRF value (also in the response body). */
export function setSessionCookies(
  reply: FastifyReply,
  http: HttpConfig,
  clock: Clock,
  token: string,
  expiresAt: number,
): string {
  const csrf = csrfToken(token);
  const maxAgeSeconds = Math.max(0, Math.floor((expiresAt - clock.now()) / 1000));
  const secure = isSecure(http);
  reply.header("set-cookie", [
    serializeCookie(sessionCookieName(http), token, { maxAgeSeconds, httpOnly: true, secure }),
    serializeCookie(CSRF_COOKIE, csrf, { maxAgeSeconds, httpOnly: false, secure }),
  ]);
  return csrf;
}

export function clearSessionCookies(reply: FastifyReply, http: HttpConfig): void {
  const secure = isSecure(http);
  reply.header("set-cookie", [
    serializeCookie(sessionCookieName(http), "", { maxAgeSeconds: 0, httpOnly: true, secure }),
    serializeCookie(CSRF_COOKIE, "", { maxAgeSeconds: 0, httpOnly: false, secure }),
  ]);
}

/**
 * The single sign-on state of the sign-in this browser began: set with the redirect to the
 * provider, sent back with its redirect (SameSite=Lax: a top-level navigation from the provider's
 * site), compared there by the auth service, then cleared. It binds the flow to the browser.
 */
const SSO_STATE_COOKIE = "orch_sso_state";
const SSO_STATE_MAX_AGE_S = 900;

export function setSsoStateCookie(reply: FastifyReply, http: HttpConfig, state: string): void {
  const attrs = {
    maxAgeSeconds: SSO_STATE_MAX_AGE_S,
    httpOnly: true,
    secure: isSecure(http),
    sameSite: "Lax",
  } as const;
  reply.header("set-cookie", serializeCookie(SSO_STATE_COOKIE, state, attrs));
}

/** The cookie's value, and a Set-Cookie that clears it (to send with whatever answers the callback). */
export function takeSsoStateCookie(req: FastifyRequest, http: HttpConfig): { state: string; clear: string } {
  const attrs = { maxAgeSeconds: 0, httpOnly: true, secure: isSecure(http), sameSite: "Lax" } as const;
  return {
    state: parseCookies(req.headers.cookie).get(SSO_STATE_COOKIE) ?? "",
    clear: serializeCookie(SSO_STATE_COOKIE, "", attrs),
  };
}
