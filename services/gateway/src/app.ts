import type { FastifyInstance } from "fastify";
import { AuthService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTokenCache, type TokenCache } from "./auth-cache.js";
import { registerConsole } from "./console/static.js";
import type { GatewayContext, GatewayDeps } from "./context.js";
import { allowedMethods } from "./framework-errors.js";
import { startLiveSessions } from "./live-nats.js";
import { notFoundHandler } from "./not-found.js";
import { buildOpenApi } from "./openapi.js";
import { errorHandler } from "./pipeline/errors.js";
import { installRoute, routeOptions } from "./pipeline/route.js";
import { throttleOf } from "./pipeline/throttle.js";
import { createRateLimiter } from "./rate-limit.js";
import type { RouteSpec } from "./route.js";
import { allRoutes } from "./routes/index.js";
import { createServer } from "./server.js";

/** The token cache and the live sessions it ends on a revocation; both stop with the app. */
function startSessions(deps: GatewayDeps, app: FastifyInstance) {
  const { config, log } = deps;
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
  return { live, tokens };
}

/** Assembles the gateway: the server, the sessions, the routes through the request pipeline. */
export async function buildGateway(
  deps: GatewayDeps,
): Promise<{ app: FastifyInstance; routes: RouteSpec[]; tokens: TokenCache }> {
  const { config, log } = deps;
  const app = await createServer(deps);
  const { live, tokens } = startSessions(deps, app);
  const ctx: GatewayContext = { ...deps, tokens, live, timeoutMs: config.nats.request_timeout_ms, app };
  const routes = allRoutes(ctx);
  const openapi = buildOpenApi(routes);
  const limiter = () => createRateLimiter({ perMinute: config.gateway.auth_rate_limit_per_minute, clock: deps.clock });
  const login = limiter();

  app.setErrorHandler(errorHandler(config.http.body_limit));
  const consoleServer = await registerConsole(app, { dir: config.http.console_dir, log });
  app.setNotFoundHandler(notFoundHandler(consoleServer, allowedMethods(routes)));
  app.get("/api/v1/openapi.json", async () => openapi);

  const auth = { tokens, http: config.http };
  for (const spec of routes) {
    const body = spec.rawBody ? "raw" : spec.streamBody ? "stream" : "json";
    installRoute(app, routeOptions(spec, auth, throttleOf(spec, login, limiter)), body);
  }
  return { app, routes, tokens };
}
