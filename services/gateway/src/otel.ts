import type { FastifyInstance } from "fastify";
import { tracingEnabled } from "@orch/kit";

/**
 * A SERVER span per HTTP request, named "<METHOD> <route template>" (never the raw URL, which
 * holds ids), continuing an incoming `traceparent`. The handler runs in a child span whose context
 * the RPC client picks up, so every NATS call made for the request joins its trace. Lifecycle hooks
 * get no spans of their own: they are cheap and would multiply the spans per request. Must be
 * registered before any route; nothing is loaded when tracing is off. Query strings are never
 * recorded (credentials such as the terminal's ticket travel there).
 */
export async function registerTracing(app: FastifyInstance): Promise<void> {
  if (!tracingEnabled()) return;
  const { FastifyOtelInstrumentation } = await import("@fastify/otel");
  const otel = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    requestHook: (span, request) => {
      span.updateName(`${request.method} ${request.routeOptions.url ?? "unmatched"}`);
      // url.path without the query: a terminal attach carries its single-use ticket there.
      span.setAttribute("url.path", request.url.split("?", 1)[0]!);
    },
    lifecycleHook: (span, info) => {
      if (info.hookName === "handler") span.updateName(`handler ${info.request.routeOptions.url ?? "unmatched"}`);
    },
  });
  await app.register(otel.plugin());
}
