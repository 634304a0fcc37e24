import { pingService } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { API_VERSION } from "../openapi.js";
import { route } from "../route.js";
import { StatusOut } from "./status-schemas.js";

export const PROTOCOL_VERSION = "1";

/**
 * ok: every service answers. degraded (still 200): some do — the API partly works, and a load
 * balancer should keep sending traffic here. unavailable (503): none answers, i.e. this gateway
 * cannot reach the bus (or the whole backend is down), so nothing but this route can work here.
 */
export function overallStatus(answered: readonly boolean[]): "ok" | "degraded" | "unavailable" {
  if (answered.every(Boolean)) return "ok";
  return answered.some(Boolean) ? "degraded" : "unavailable";
}

export function statusRoutes(ctx: GatewayContext) {
  return [
    route({
      method: "GET",
      path: "/api/v1/status",
      auth: "public",
      summary: "Protocol version and health of every service",
      description:
        "200 with `ok` when every service answers a ping, 200 with `degraded` when some do; 503 with `unavailable` " +
        "(same body) when none does — the gateway cannot reach the bus.",
      tags: ["status"],
      responses: { 200: StatusOut, 503: StatusOut },
      async handler(_req, reply) {
        const names = ctx.config.gateway.services;
        // A closed connection never comes back; a reconnecting one makes each ping time out (1 s).
        const results = ctx.nc.isClosed()
          ? names.map(() => false)
          : await Promise.all(names.map((n) => pingService(ctx.nc, n, 1000)));
        const services: Record<string, "ok" | "unavailable"> = {};
        for (const [i, n] of names.entries()) services[n] = results[i] ? "ok" : "unavailable";
        const status = overallStatus(results);
        const body = { status, protocol_version: PROTOCOL_VERSION, api_version: API_VERSION, services };
        if (status !== "unavailable") return body;
        return reply.code(503).header("retry-after", "1").send(body);
      },
    }),
  ];
}
