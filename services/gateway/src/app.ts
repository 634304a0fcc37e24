import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RouteOptions,
} from "fastify";
import type { z } from "zod";
import { AuthService } from "@orch/contracts";
import {
  OrchError,
  forbidden,
  rejectInvalidStrings,
  rpcClient,
  unauthenticated,
  type Clock,
  type IdGenerator,
  type Logger,
  type MetricsRegistry,
  type NatsConnection,
} from "@orch/kit";
import { createTokenCache, type Principal, type TokenCache } from "./auth-cache.js";
import type { GatewayConfig } from "./config.js";
import { allowedMethods, clientErrorHandler, frameworkErrorHandler } from "./framework-errors.js";
import { registerHttpMetrics } from "./http-metrics.js";
import { parseJsonBody } from "./json-body.js";
import { buildOpenApi } from "./openapi.js";
import { problem, problemFromError, sendProblem } from "./problem.js";
import { createRateLimiter } from "./rate-limit.js";
import { idempotencyOf } from "./idempotency.js";
import { startLiveSessions, type GatewayLiveSessions } from "./live-sessions.js";
import { fastifyPath, successStatus, type RouteSpec } from "./route.js";
import { allRoutes } from "./routes/index.js";
import { applySecurityHeaders } from "./security-headers.js";
import { requireCsrf } from "./console/csrf.js";
import { requestToken } from "./console/session.js";
import { registerConsole } from "./console/static.js";
import { registerTracing } from "./otel.js";
import { requestLogger } from "./request-logger.js";

/** Sign-in routes share one per-address rate limit (gateway.auth_rate_limit_per_minute). */
const LOGIN_ROUTES = new Set([
  "POST /api/v1/auth/challenge",
  "POST /api/v1/auth/verify",
  "POST /api/v1/auth/console/exchange",
  "POST /api/v1/auth/passkeys/authentication-options",
  "POST /api/v1/auth/passkeys/authentication",
]);

export interface GatewayDeps {
  config: Readonly<GatewayConfig>;
  log: Logger;
  nc: NatsConnection;
  clock: Clock;
  ids: IdGenerator;
  /** The process registry (runMain's, served on the health port); absent in tests that do not read metrics. */
  metrics?: MetricsRegistry;
}

/** What route modules receive. */
export interface GatewayContext extends GatewayDeps {
  tokens: TokenCache;
  /** Long-lived connections (audit stream, terminals) bound to the credential that opened them. */
  live: GatewayLiveSessions;
  /** Default RPC timeout for route handlers. */
  timeoutMs: number;
  app: FastifyInstance;
}

declare module "fastify" {
  interface FastifyRequest {
    principal?: Principal;
  }
}

function zodIssues(location: string, err: z.ZodError) {
  return err.issues.map((i) => ({ location, field: i.path.map(String).join(".") || "(root)", message: i.message }));
}

export async function buildGateway(
  deps: GatewayDeps,
): Promise<{ app: FastifyInstance; routes: RouteSpec[]; tokens: TokenCache }> {
  const { config, log } = deps;
  // A ULID per request costs 16 crypto calls; one per process plus a counter is just as unique.
  let reqPrefix: string | undefined;
  let reqSeq = 0;
  const app = Fastify({
    loggerInstance: log as unknown as FastifyBaseLogger,
    // Per-request access logs cost measurable CPU on the hot path; errors are logged by the handler.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.http.body_limit,
    trustProxy: config.http.trust_proxy,
    requestIdHeader: "x-request-id",
    genReqId: () => `${(reqPrefix ??= deps.ids.next())}-${(++reqSeq).toString(36)}`,
    // req.log keeps its reqId binding but is only built when a request writes a line.
    childLoggerFactory: requestLogger,
    return503OnClosing: true,
    // Errors raised before routing or by the HTTP parser answer problem+json like every other.
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
  });
  await registerTracing(app); // before any route and hook, so that they run inside the request span
  // Hooks on every request take fastify's callback form: an async one costs a promise and a microtask turn.
  app.addHook("onRequest", (_req, reply, done) => {
    applySecurityHeaders(reply.raw);
    done();
  });
  if (deps.metrics) registerHttpMetrics(app, deps.metrics);

  // Empty bodies are allowed (POST /terminal has none); invalid or too deeply nested JSON is a clean 400.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(typeof body === "string" ? body : body.toString("utf8")));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  const auth = rpcClient(deps.nc, "auth", AuthService, { timeoutMs: config.nats.request_timeout_ms });
  const live = startLiveSessions({
    nc: deps.nc,
    clock: deps.clock,
    log,
    timeoutMs: config.nats.request_timeout_ms,
    revalidateMs: config.gateway.token_cache_ttl_ms,
  });
  app.addHook("onClose", async () => live.stop());
  const tokens = createTokenCache({
    nc: deps.nc,
    auth,
    clock: deps.clock,
    log,
    ttlMs: config.gateway.token_cache_ttl_ms,
    maxSize: config.gateway.token_cache_size,
    onRevocation: live.onRevocation,
  });
  const ctx: GatewayContext = { ...deps, tokens, live, timeoutMs: config.nats.request_timeout_ms, app };
  const routes = allRoutes(ctx);
  const openapi = buildOpenApi(routes);
  const limiter = createRateLimiter({ perMinute: config.gateway.auth_rate_limit_per_minute, clock: deps.clock });

  app.setErrorHandler((err: Error & { code?: string; statusCode?: number }, req, reply) => {
    if (err instanceof OrchError) {
      // Also raised by the RPC client (encoding, bus) and by services: the cause is only in the log.
      if (err.code === "INTERNAL") req.log.error({ err: err.cause ?? err, requestId: req.id }, "internal error");
      return sendProblem(reply, problemFromError(err, req.id));
    }
    switch (err.code) {
      case "FST_ERR_CTP_BODY_TOO_LARGE":
        return sendProblem(
          reply,
          problem(
            "body_too_large",
            `the request body exceeds ${req.routeOptions.bodyLimit ?? config.http.body_limit} bytes`,
          ),
        );
      case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
        return sendProblem(reply, problem("unsupported_media_type", "send JSON with Content-Type: application/json"));
      case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
        return sendProblem(reply, problem("invalid_request", "invalid Content-Length"));
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
      return sendProblem(reply, problem("invalid_request", err.message, {}, err.statusCode));
    const e = OrchError.from(err);
    if (e.code === "INTERNAL") req.log.error({ err, requestId: req.id }, "unhandled error");
    return sendProblem(reply, problemFromError(e, req.id));
  });
  const methodsOf = allowedMethods(routes);
  const consoleServer = await registerConsole(app, { dir: config.http.console_dir, log });
  app.setNotFoundHandler((req, reply) => {
    const page = consoleServer.fallback(req, reply);
    if (page) return page;
    const path = req.url.split("?")[0] ?? "";
    const allow = methodsOf(path);
    if (allow.length > 0) {
      reply.header("allow", allow.join(", "));
      const detail = `${req.method} is not allowed on ${path}; use ${allow.join(", ")}`;
      return sendProblem(reply, problem("method_not_allowed", detail));
    }
    return sendProblem(reply, problem("route_not_found", `no route ${req.method} ${path}`));
  });

  app.get("/api/v1/openapi.json", async () => openapi);

  for (const spec of routes) {
    const status = successStatus(spec);
    const throttle = LOGIN_ROUTES.has(`${spec.method} ${spec.path}`)
      ? { limiter, key: (req: FastifyRequest) => req.ip, what: "login attempts" }
      : spec.rateLimitKey
        ? {
            // A budget of its own: deliveries to this route neither eat nor share the sign-in one.
            limiter: createRateLimiter({ perMinute: config.gateway.auth_rate_limit_per_minute, clock: deps.clock }),
            key: spec.rateLimitKey,
            what: "requests",
          }
        : undefined;
    const options: RouteOptions = {
      method: spec.method,
      url: fastifyPath(spec.path),
      ...(spec.rawBody ? { bodyLimit: spec.rawBody.maxBytes } : {}),
      // Authentication and authorization run before the body is parsed or anything is looked up.
      // Callback form: a cached token (nearly every request) is checked without a promise. What
      // throws before done() is fastify's to catch (as a rejection would be); done() runs outside
      // any try, so an error further down the chain is never reported twice.
      onRequest: (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
        if (throttle) {
          const wait = throttle.limiter.take(throttle.key(req));
          if (wait > 0) {
            reply.header("retry-after", String(Math.ceil(wait / 1000)));
            throw new OrchError("RESOURCE_EXHAUSTED", "rate_limited", `too many ${throttle.what}; retry later`);
          }
        }
        if (spec.auth === "public") return done();
        const cred = requestToken(req, config.http);
        if (!cred) throw unauthenticated("unauthenticated", "send Authorization: Bearer <token> (orchctl login)");
        const admit = (principal: Principal) => {
          req.principal = principal;
          // After the token check: a stale console tab gets 401 (sign in again), not a CSRF error.
          if (cred.via === "cookie") requireCsrf(req, cred.token);
          if (spec.auth === "admin" && principal.role !== "admin") throw forbidden();
        };
        const hit = tokens.cached(cred.token);
        if (hit) {
          admit(hit);
          return done();
        }
        tokens.resolve(cred.token).then(
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
      },
      handler: async (req, reply) => {
        const parse = <T>(schema: z.ZodType<T> | undefined, value: unknown, location: string): T => {
          if (!schema) return undefined as T;
          const r = schema.safeParse(value ?? (location === "body" ? undefined : {}));
          if (!r.success) {
            const errors = zodIssues(location, r.error);
            const first = errors[0]!;
            // Every paginated list refuses a cursor it did not hand out the same way (see pagination.ts).
            const code = location === "query" && first.field === "cursor" ? "invalid_cursor" : "invalid_request";
            throw new OrchError(
              "INVALID_ARGUMENT",
              code,
              `${location} ${first.field === "(root)" ? "" : `field '${first.field}' `}${first.message}`.replace(
                /\s+/g,
                " ",
              ),
              { errors },
            );
          }
          return r.data;
        };
        // NUL and lone surrogates are refused before validation, whatever the route's schema allows.
        rejectInvalidStrings(req.params, "path");
        rejectInvalidStrings(req.query, "query");
        const params = parse(spec.params, req.params, "path");
        const query = parse(spec.query, req.query, "query");
        let body: unknown;
        if (spec.rawBody) body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        else {
          rejectInvalidStrings(req.body, "body");
          body = parse(spec.body, req.body, "body");
        }
        const p = req.principal;
        const idem = idempotencyOf(spec, req, reply);
        const out = await spec.handler(
          {
            params,
            query,
            body,
            principal: p,
            raw: req,
            call: {
              requestId: req.id,
              ...(p ? { actor: { id: p.id, name: p.name, type: "operator", role: p.role, scope: p.scope } } : {}),
              ...idem,
            },
          },
          reply,
        );
        if (out === reply || reply.sent) return reply;
        reply.code(status);
        return out === undefined ? reply.send() : out;
      },
    };
    if (!spec.rawBody) app.route(options);
    else {
      // Content-type parsers are scoped: only this route keeps the bytes, every other one parses JSON.
      const rawScope = async (scope: FastifyInstance) => {
        scope.removeAllContentTypeParsers();
        const keep = (_req: FastifyRequest, body: Buffer, done: (err: null, body: Buffer) => void) => done(null, body);
        // "*" alone would do after the removal; JSON named too so no inherited parser can ever win.
        scope.addContentTypeParser("application/json", { parseAs: "buffer" }, keep);
        scope.addContentTypeParser("*", { parseAs: "buffer" }, keep);
        scope.route(options);
      };
      app.register(rawScope);
    }
  }
  return { app, routes, tokens };
}
