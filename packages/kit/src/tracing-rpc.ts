/**
 * Spans for every NATS RPC, as an RpcObserver: a CLIENT span around each request (its traceparent
 * travels in the NATS headers) and a SERVER span around each handled one, child of the caller's.
 * runMain registers it only when tracing is on, so a default install does no work per request.
 */
import { H } from "./rpc.js";
import type { RpcCallInfo, RpcObserver } from "./rpc-observers.js";
import { extractTrace, injectTrace, SpanKind, SpanStatusCode, withSpan, type Span } from "./tracing.js";

/**
 * Codes that mean the server failed, not that it refused the caller (the OpenTelemetry RPC
 * conventions' server-side list): a NOT_FOUND or PERMISSION_DENIED answered on purpose is a
 * success for the server's span, while the caller's span shows every non-OK answer as an error.
 */
export const SERVER_FAULT_CODES: ReadonlySet<string> = new Set([
  "UNKNOWN",
  "DEADLINE_EXCEEDED",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
]);

const attributes = (info: RpcCallInfo) => ({
  "rpc.system": "nats",
  "rpc.service": info.service,
  "rpc.method": info.method,
});

/** Span name: `<service>/<Method>` (service "agent" for per-agent subjects, never an id). */
export const rpcSpanName = (info: RpcCallInfo) => `${info.service}/${info.method}`;

function answered(span: Span | undefined, code: string, fault: boolean): void {
  if (!span || !code) return;
  span.setAttribute("rpc.response.status_code", code);
  if (fault) span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}

export function tracingRpcObserver(): RpcObserver {
  return {
    client(info, headers, send) {
      return withSpan(rpcSpanName(info), { kind: SpanKind.CLIENT, attributes: attributes(info) }, async (span) => {
        injectTrace((k, v) => headers.set(k, v));
        // A rejection (timeout, no responders) is recorded as an error by withSpan.
        const reply = await send();
        answered(span, reply.headers?.get(H.error) ?? "", true);
        return reply;
      });
    },
    server(info, headers, handle) {
      const parent = extractTrace((k) => headers?.get(k));
      return withSpan(
        rpcSpanName(info),
        { kind: SpanKind.SERVER, attributes: attributes(info), parent },
        async (span) => {
          const code = await handle();
          answered(span, code, SERVER_FAULT_CODES.has(code));
          return code;
        },
      );
    },
  };
}
