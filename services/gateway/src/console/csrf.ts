import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { CSRF_HEADER } from "@orch/contracts/console";
import { OrchError } from "@orch/kit";
import type { GatewayConfig } from "../config.js";
import { originAllowed } from "../ws/origin.js";

/**
 * The CSRF value of a console session, derived from its token so the gateway stores nothing:
 * a page on another site can neither read the cookie nor compute this without the token.
 */
export const csrfToken = (sessionToken: string): string =>
  createHash("sha256").update(`orch-csrf:${sessionToken}`).digest("base64url");

export function csrfMatches(sessionToken: string, presented: string | undefined): boolean {
  if (!presented) return false;
  const want = Buffer.from(csrfToken(sessionToken));
  const got = Buffer.from(presented);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** Safe methods change nothing, so only the others need proof that the console's own script sent them. */
export function requireCsrf(req: FastifyRequest, sessionToken: string): void {
  if (req.method === "GET" || req.method === "HEAD") return;
  const h = req.headers[CSRF_HEADER];
  if (!csrfMatches(sessionToken, typeof h === "string" ? h : undefined))
    throw new OrchError(
      "PERMISSION_DENIED",
      "csrf_token_invalid",
      `a console request that changes state must carry the ${CSRF_HEADER} header`,
    );
}

/**
 * Routes that set the session cookie are public, so there is no CSRF token yet: the browser's
 * Origin header is what shows the request came from the console (login CSRF defence). Unlike a
 * terminal upgrade, a missing Origin is refused: only browsers use these routes.
 */
export function requireConsoleOrigin(req: FastifyRequest, http: GatewayConfig["http"]): void {
  const origin = req.headers.origin;
  if (!origin || !originAllowed(origin, req.headers.host, http))
    throw new OrchError(
      "PERMISSION_DENIED",
      "origin_not_allowed",
      "this sign-in must come from the console's own origin",
    );
}
