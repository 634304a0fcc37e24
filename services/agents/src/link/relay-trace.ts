import type { MsgHdrs } from "@nats-io/transport-node";
import { SpanKind, SpanStatusCode, extractTrace, injectTrace, tracingEnabled, withSpan } from "@orch/kit";

/** One relayed request's span: the context to hand the agent, and its end. */
export interface RelaySpan {
  /** `traceparent`/`tracestate` of this span, for the Request frame's trace_context. */
  traceContext: Record<string, string>;
  /** Ends the span; `error` (an error reason or code) marks it failed. */
  end(error?: string): void;
}

/**
 * Starts "agents.relay <Method>" as a child of the caller's trace (the NATS request's
 * `traceparent`). It lasts until the agent answers, times out or drops the link, so it is ended
 * by the relay rather than by a callback's return. Undefined when tracing is off: nothing is
 * allocated and the frame carries no context.
 */
export function startRelaySpan(method: string, nodeId: string, headers: MsgHdrs | undefined): RelaySpan | undefined {
  if (!tracingEnabled()) return undefined;
  const traceContext: Record<string, string> = {};
  let end: RelaySpan["end"] = () => {};
  // withSpan calls its callback synchronously, so traceContext and end are set before it returns.
  void withSpan(
    `agents.relay ${method}`,
    {
      kind: SpanKind.CLIENT,
      parent: extractTrace((k) => headers?.get(k)),
      attributes: { "rpc.system": "orch-agent-link", "rpc.method": method, "orch.node_id": nodeId },
    },
    (span) => {
      injectTrace((k, v) => {
        traceContext[k] = v;
      });
      return new Promise<void>((resolve) => {
        end = (error) => {
          if (error) span?.setStatus({ code: SpanStatusCode.ERROR, message: error });
          resolve();
        };
      });
    },
  );
  return { traceContext, end };
}
