import type { DescMethod, MessageInitShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import type { ErrorReason, Request, ResponseSchema } from "@orch/contracts";
import { createMessageCodec } from "@orch/kit/codec";
import { SpanKind, SpanStatusCode, extractTrace, tracingEnabled, withSpan } from "@orch/kit/tracing";
import { AgentError, type AgentCallContext, type AgentHandlers, type AgentLogger } from "../runtime.js";

type ResponseInit = MessageInitShape<typeof ResponseSchema>;
type AnyHandler = (req: unknown, ctx: AgentCallContext) => Promise<unknown>;
type HandleOptions = { approved: boolean; now?: () => number };

const fail = (id: bigint, code: string, reason: ErrorReason, message: string): ResponseInit => ({
  id,
  error: { code, reason, message },
});

/**
 * Per-agent RPC methods by name (the last token of `orch.agent.<node_id>.<Method>`), decoded and
 * encoded with the proto service's own schemas. The payload is opaque to the agents service.
 */
export function createDispatcher(log: AgentLogger) {
  // The services' codec: an apply's request (its resources' Structs) costs a fraction of protobuf-es' reflective decode.
  const codec = createMessageCodec();
  const methods = new Map<string, { method: DescMethod; handler: AnyHandler }>();
  return {
    serve<S extends GenService<GenServiceMethods>>(service: S, handlers: AgentHandlers<S>): void {
      for (const method of (service as unknown as { methods: DescMethod[] }).methods) {
        const handler = (handlers as Record<string, AnyHandler>)[method.localName];
        if (!handler) throw new Error(`no handler for ${method.parent.typeName}.${method.name}`);
        if (methods.has(method.name)) throw new Error(`agent method ${method.name} is served twice`);
        methods.set(method.name, { method, handler });
      }
    },
    methods: () => [...methods.keys()],
    handle(req: Request, opts: HandleOptions): Promise<ResponseInit> {
      if (!tracingEnabled()) return run(req, opts);
      // The server span continues the relay's trace (the Request frame's trace_context).
      return withSpan(
        `agent ${req.method}`,
        {
          kind: SpanKind.SERVER,
          parent: extractTrace((k) => req.traceContext[k]),
          attributes: { "rpc.system": "orch-agent-link", "rpc.method": req.method },
        },
        async (span) => {
          const res = await run(req, opts);
          if (res.error) span?.setStatus({ code: SpanStatusCode.ERROR, message: res.error.reason || res.error.code });
          return res;
        },
      );
    },
  };

  async function run(req: Request, opts: HandleOptions): Promise<ResponseInit> {
    const now = opts.now ?? Date.now;
    const entry = methods.get(req.method);
    if (!entry) return fail(req.id, "INTERNAL", "unknown_method", `this agent does not serve ${req.method}`);
    // The server relays nothing to unapproved agents; refusing here too keeps that true if it ever did.
    if (!opts.approved) return fail(req.id, "FAILED_PRECONDITION", "agent_not_approved", "the agent is not approved");
    const deadline = req.deadline > 0 ? req.deadline : now() + 30_000;
    if (deadline <= now())
      return fail(req.id, "DEADLINE_EXCEEDED", "deadline_exceeded", "the request expired before it reached the agent");
    let input: unknown;
    try {
      input = codec.decode(entry.method.input, req.payload);
    } catch {
      return fail(req.id, "INVALID_ARGUMENT", "invalid_payload", `the ${req.method} payload could not be decoded`);
    }
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<"expired">((resolve) => {
      timer = setTimeout(() => resolve("expired"), deadline - now());
    });
    try {
      const out = await Promise.race([entry.handler(input, { deadline }), expired]);
      if (out === "expired")
        return fail(
          req.id,
          "DEADLINE_EXCEEDED",
          "deadline_exceeded",
          `${req.method} did not finish before its deadline`,
        );
      return { id: req.id, payload: codec.encode(entry.method.output, out) };
    } catch (err) {
      if (err instanceof AgentError) return fail(req.id, err.code, err.reason, err.message);
      log.error({ err, method: req.method }, "agent handler failed");
      return fail(req.id, "INTERNAL", "internal", "internal error on the agent");
    } finally {
      clearTimeout(timer);
    }
  }
}
export type Dispatcher = ReturnType<typeof createDispatcher>;
