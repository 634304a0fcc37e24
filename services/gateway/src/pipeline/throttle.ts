import type { FastifyReply, FastifyRequest } from "fastify";
import { OrchError } from "@orch/kit";
import type { RateLimiter } from "../rate-limit.js";
import type { RouteSpec } from "../route.js";

/** Sign-in routes share one per-address rate limit (gateway.auth_rate_limit_per_minute). */
const LOGIN_ROUTES = new Set([
  "POST /api/v1/auth/challenge",
  "POST /api/v1/auth/verify",
  "POST /api/v1/auth/console/exchange",
  "POST /api/v1/auth/passkeys/authentication-options",
  "POST /api/v1/auth/passkeys/authentication",
]);

export interface Throttle {
  limiter: RateLimiter;
  key: (req: FastifyRequest) => string;
  /** For the refusal: "too many <what>". */
  what: string;
}

/**
 * The throttle of a route, if any: the shared sign-in budget for the login routes, a budget of its
 * own (from `fresh`) for a route that declares a rateLimitKey.
 */
export function throttleOf(spec: RouteSpec, login: RateLimiter, fresh: () => RateLimiter): Throttle | undefined {
  if (LOGIN_ROUTES.has(`${spec.method} ${spec.path}`))
    return { limiter: login, key: (req) => req.ip, what: "login attempts" };
  // A budget of its own: deliveries to this route neither eat nor share the sign-in one.
  if (spec.rateLimitKey) return { limiter: fresh(), key: spec.rateLimitKey, what: "requests" };
  return undefined;
}

/** Takes a token for the request, or refuses it with Retry-After. */
export function throttle(t: Throttle, req: FastifyRequest, reply: FastifyReply): void {
  const wait = t.limiter.take(t.key(req));
  if (wait > 0) {
    reply.header("retry-after", String(Math.ceil(wait / 1000)));
    throw new OrchError("RESOURCE_EXHAUSTED", "rate_limited", `too many ${t.what}; retry later`);
  }
}
