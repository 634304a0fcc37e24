import { z } from "zod";
import { pingService } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { API_VERSION } from "../openapi.js";
import { route } from "../route.js";

export const PROTOCOL_VERSION = "1";

const StatusOut = z.object({
  status: z.enum(["ok", "degraded"]),
  protocol_version: z.string(),
  api_version: z.string(),
  services: z.record(z.string(), z.enum(["ok", "unavailable"])),
});

export function statusRoutes(ctx: GatewayContext) {
  return [
    route({
      method: "GET",
      path: "/api/v1/status",
      auth: "public",
      summary: "Protocol version and health of every service",
      tags: ["status"],
      responses: { 200: StatusOut },
      async handler() {
        const names = ctx.config.gateway.services;
        const results = await Promise.all(names.map((n) => pingService(ctx.nc, n, 1000)));
        const services = Object.fromEntries(names.map((n, i) => [n, results[i] ? "ok" : "unavailable"])) as Record<string, "ok" | "unavailable">;
        return { status: results.every(Boolean) ? "ok" : "degraded", protocol_version: PROTOCOL_VERSION, api_version: API_VERSION, services };
      },
    }),
  ];
}
