import type { GatewayContext } from "../app.js";
import type { RouteSpec } from "../route.js";
import { authRoutes } from "./auth.js";
import { operatorRoutes } from "./operators.js";
import { statusRoutes } from "./status.js";

/** Every route module, one line each. A module builds its own RPC client from ctx.nc. */
export function allRoutes(ctx: GatewayContext): RouteSpec[] {
  return [
    ...statusRoutes(ctx),
    ...authRoutes(ctx),
    ...operatorRoutes(ctx),
  ];
}
