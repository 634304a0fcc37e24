import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { GatewayDeps } from "./context.js";
import { clientErrorHandler, frameworkErrorHandler } from "./framework-errors.js";
import { registerHttpMetrics } from "./http-metrics.js";
import { parseJsonBody } from "./json-body.js";
import { registerTracing } from "./otel.js";
import { requestLogger } from "./request-logger.js";
import { applySecurityHeaders } from "./security-headers.js";

/** The fastify instance with what every request gets before any route: ids, logs, tracing, headers, JSON. */
export async function createServer(deps: GatewayDeps): Promise<FastifyInstance> {
  const { config } = deps;
  // A ULID per request costs 16 crypto calls; one per process plus a counter is just as unique.
  let reqPrefix: string | undefined;
  let reqSeq = 0;
  const app = Fastify({
    loggerInstance: deps.log as unknown as FastifyBaseLogger,
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
  // The bytes, not fastify's string: its decoding replaces invalid UTF-8 instead of refusing it.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(typeof body === "string" ? Buffer.from(body) : body));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  return app;
}
