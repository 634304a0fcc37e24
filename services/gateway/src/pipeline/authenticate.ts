import type { FastifyRequest } from "fastify";
import { forbidden, unauthenticated } from "@orch/kit";
import type { Principal, TokenCache } from "../auth-cache.js";
import type { GatewayConfig } from "../config.js";
import { requireCsrf } from "../console/csrf.js";
import { requestToken } from "../console/session.js";
import type { AuthLevel } from "../route.js";

export interface AuthenticateDeps {
  tokens: TokenCache;
  http: GatewayConfig["http"];
}

/**
 * Authenticates and authorizes a request of a route at `level`, setting req.principal, then calls
 * `done` (with the refusal, if any). Callback form: a cached token (nearly every request) is checked
 * without a promise. What throws before done() is fastify's to catch (as a rejection would be);
 * done() runs outside any try, so an error further down the chain is never reported twice.
 */
export function authenticate(
  deps: AuthenticateDeps,
  level: AuthLevel,
  req: FastifyRequest,
  done: (err?: Error) => void,
): void {
  if (level === "public") {
    done();
    return;
  }
  const cred = requestToken(req, deps.http);
  if (!cred) throw unauthenticated("unauthenticated", "send Authorization: Bearer <token> (orchctl login)");
  const admit = (principal: Principal) => {
    req.principal = principal;
    // After the token check: a stale console tab gets 401 (sign in again), not a CSRF error.
    if (cred.via === "cookie") requireCsrf(req, cred.token);
    if (level === "admin" && principal.role !== "admin") throw forbidden();
  };
  const hit = deps.tokens.cached(cred.token);
  if (hit) {
    admit(hit);
    done();
    return;
  }
  deps.tokens.resolve(cred.token).then(
    (principal) => {
      let refused: Error | undefined;
      try {
        admit(principal);
      } catch (err) {
        refused = err as Error;
      }
      done(refused);
    },
    (err: Error) => done(err),
  );
}
