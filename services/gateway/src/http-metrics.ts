import type { FastifyInstance } from "fastify";
import { bounded, metric, type MetricsRegistry } from "@orch/kit";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** 2xx..5xx; anything outside 100..599 (a client that went away) is "other". */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : "other";
}

/**
 * RED metrics of every HTTP request: orch_http_requests_total and orch_http_request_duration_seconds
 * by route template (never the raw URL, which carries ids), method and status class. Requests no
 * route matched share route="unmatched", so scanners cannot mint series.
 */
export function registerHttpMetrics(app: FastifyInstance, registry: MetricsRegistry): void {
  const requests = metric(registry, "orch_http_requests_total");
  const duration = metric(registry, "orch_http_request_duration_seconds");
  // Callback form: an async hook would cost every request a promise and a microtask turn.
  app.addHook("onResponse", (req, reply, done) => {
    // Fastify keeps routeOptions.url for the 404 handler too; is404 tells it apart.
    const template = req.is404 ? undefined : req.routeOptions.url;
    const labels = {
      route: template ?? "unmatched",
      method: bounded(req.method, METHODS),
      status_class: statusClass(reply.statusCode),
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
}
