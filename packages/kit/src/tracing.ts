/**
 * OpenTelemetry tracing for every process (services, gateway, orch-agent). Off unless the standard
 * OTLP variables ask for it (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), so
 * a default install pays nothing: with no provider registered the API hands out no-op spans and the
 * hot paths check `tracingEnabled()` before touching headers. When on, W3C `traceparent` travels in
 * NATS headers (RPC, outbox publishes, consumers) and in the agent link's request frames (the link
 * is one long-lived gRPC stream, so a `trace_context` field rather than per-call metadata); spans
 * are exported over OTLP/HTTP with the SDK's own OTEL_* settings (sampler, headers, batch sizes).
 */
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

export { SpanKind, SpanStatusCode, type Context, type Link, type Span };

let enabled = false;

/** Whether spans are recorded and exported (false = every helper here is a cheap pass-through). */
export function tracingEnabled(): boolean {
  return enabled;
}

export interface Tracing {
  enabled: boolean;
  /** Flushes pending spans; call before the process exits. */
  shutdown(): Promise<void>;
}

/** Reads the OTEL_* environment once: does this process export traces? */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  if ((env.OTEL_TRACES_EXPORTER ?? "otlp").split(",").every((e) => e.trim() === "none")) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Registers the global tracer provider (AsyncLocalStorage context, W3C propagator) when tracing is
 * requested. Idempotent per process; `service.name` comes from OTEL_SERVICE_NAME when set.
 */
export function startTracing(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
  /** Tests: where spans go instead of the OTLP exporter (e.g. a SimpleSpanProcessor over an in-memory exporter). */
  opts: { spanProcessor?: SpanProcessor } = {},
): Tracing {
  if (enabled || !tracingRequested(env)) return { enabled, shutdown: async () => {} };
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || serviceName }),
    spanProcessors: [opts.spanProcessor ?? new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  enabled = true;
  return {
    enabled: true,
    shutdown: async () => {
      enabled = false;
      await provider.forceFlush().catch(() => {});
      await provider.shutdown().catch(() => {});
    },
  };
}

/** The project's tracer (instrumentation scope "orch"). */
export const tracer = () => trace.getTracer("orch");

/** Writes the active context's `traceparent`/`tracestate` through `set` (no-op when tracing is off). */
export function injectTrace(set: (key: string, value: string) => void, ctx: Context = context.active()): void {
  if (!enabled) return;
  propagation.inject(ctx, undefined, { set: (_c, k, v) => set(k, v) });
}

/** The context carried by incoming `traceparent`/`tracestate` (the active one when tracing is off). */
export function extractTrace(get: (key: string) => string | undefined): Context {
  if (!enabled) return context.active();
  return propagation.extract(context.active(), undefined, {
    get: (_c, k) => get(k) || undefined,
    keys: () => ["traceparent", "tracestate"],
  });
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Parent context (e.g. from extractTrace); default the active one. */
  parent?: Context;
  /** Spans this one relates to without being their child (a batch linking the messages it stores). */
  links?: Link[];
}

/** A link to the active span (e.g. a message's consumer span, kept for the batch that stores it); none when off. */
export function activeLink(): Link | undefined {
  if (!enabled) return undefined;
  const sc = trace.getActiveSpan()?.spanContext();
  return sc ? { context: sc } : undefined;
}

/**
 * Runs `fn` inside a span named `name`, ending it when `fn` settles and recording a thrown error.
 * With tracing off `fn` runs directly (no span object, no context switch).
 */
export async function withSpan<T>(
  name: string,
  opts: SpanOptions,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!enabled) return fn(undefined);
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    {
      kind: opts.kind ?? SpanKind.INTERNAL,
      ...(opts.attributes ? { attributes: opts.attributes } : {}),
      ...(opts.links?.length ? { links: opts.links } : {}),
    },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message ?? String(err) });
    throw err;
  } finally {
    span.end();
  }
}
