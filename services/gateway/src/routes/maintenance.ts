import { z } from "zod";
import { NotifyService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { WindowOut, windowJsonFor } from "./maintenance-json.js";
import { UnixSeconds, WindowId } from "./maintenance-schemas.js";

export function maintenanceRoutes(ctx: GatewayContext) {
  const notify = rpcClient(ctx.nc, "notify", NotifyService, { timeoutMs: ctx.timeoutMs });
  const windowJson = windowJsonFor(ctx.clock);
  return [
    route({
      method: "GET",
      path: "/api/v1/maintenance-windows",
      auth: "operator",
      summary: "List maintenance windows",
      tags: ["maintenance"],
      query: pageQuery,
      responses: {
        200: z.object({ windows: z.array(WindowOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      async handler({ query, call }) {
        const r = await notify.listWindows({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return { windows: r.windows.map(windowJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/maintenance-windows",
      auth: "admin",
      summary: "Create a maintenance window (channel deliveries are suppressed while it is active)",
      tags: ["maintenance"],
      body: z.object({ starts_at: UnixSeconds, ends_at: UnixSeconds, reason: z.string().min(1).max(1000) }),
      responses: { 201: WindowOut },
      errors: { 400: ["invalid_request", "invalid_window"] },
      async handler({ body, call }) {
        return windowJson(
          await notify.createWindow(
            { startsAt: body.starts_at * 1000, endsAt: body.ends_at * 1000, reason: body.reason },
            call,
          ),
        );
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/maintenance-windows/{id}",
      auth: "operator",
      summary: "Get one maintenance window",
      tags: ["maintenance"],
      params: WindowId,
      responses: { 200: WindowOut },
      errors: { 404: ["window_not_found"] },
      async handler({ params, call }) {
        return windowJson(await notify.getWindow({ id: params.id }, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/maintenance-windows/{id}",
      auth: "admin",
      summary: "Update a maintenance window (typically ends_at = now to end it early)",
      tags: ["maintenance"],
      params: WindowId,
      body: z.object({
        starts_at: UnixSeconds.optional(),
        ends_at: UnixSeconds.optional(),
        reason: z.string().min(1).max(1000).optional(),
      }),
      responses: { 200: WindowOut },
      errors: { 400: ["invalid_request", "invalid_window"], 404: ["window_not_found"] },
      async handler({ params, body, call }) {
        const req = {
          id: params.id,
          ...(body.starts_at !== undefined ? { startsAt: body.starts_at * 1000 } : {}),
          ...(body.ends_at !== undefined ? { endsAt: body.ends_at * 1000 } : {}),
          ...(body.reason !== undefined ? { reason: body.reason } : {}),
        };
        return windowJson(await notify.updateWindow(req, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/maintenance-windows/{id}",
      auth: "admin",
      summary: "Delete a maintenance window",
      tags: ["maintenance"],
      params: WindowId,
      responses: { 204: null },
      errors: { 404: ["window_not_found"] },
      async handler({ params, call }) {
        await notify.deleteWindow({ id: params.id }, call);
      },
    }),
  ];
}
