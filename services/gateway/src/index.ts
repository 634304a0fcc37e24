import type { GatewayContext } from "./context.js";
import { buildOpenApi } from "./openapi.js";
import { allRoutes } from "./routes/index.js";

export { buildGateway } from "./app.js";
export type { GatewayContext, GatewayDeps } from "./context.js";
export { gatewayConfigSchema, type GatewayConfig } from "./config.js";
export { route, type RouteSpec } from "./route.js";

/**
 * The OpenAPI document without a running gateway: route modules only keep references to the
 * context while building the table, so inert stand-ins are enough (packages/client generates from it).
 */
export function openApiDocument(): Record<string, unknown> {
  const inert = new Proxy({}, { get: () => () => undefined });
  const ctx = { app: inert, nc: inert, live: inert, tokens: inert, timeoutMs: 0 } as unknown as GatewayContext;
  return buildOpenApi(allRoutes(ctx));
}
