export { buildGateway, type GatewayContext, type GatewayDeps } from "./app.js";
export { gatewayConfigSchema, type GatewayConfig } from "./config.js";
export { route, type RouteSpec } from "./route.js";
