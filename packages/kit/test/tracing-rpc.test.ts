import { create } from "@bufbuild/protobuf";
import { AuthService, OperatorSchema } from "@orch/contracts";
import {
  addRpcObserver,
  notFound,
  rpcClient,
  serveRpc,
  SpanKind,
  SpanStatusCode,
  startTracing,
  tracingRpcObserver,
  withSpan,
  type Handlers,
} from "@orch/kit";
import { silentLogger, startNats } from "@orch/kit/testing";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import t from "tap";

// The process's tracer provider, exporting into memory instead of OTLP.
const exporter = new InMemorySpanExporter();
const tracing = startTracing(
  "tracing-rpc-test",
  { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" },
  { spanProcessor: new SimpleSpanProcessor(exporter) },
);
t.teardown(() => tracing.shutdown());
t.teardown(addRpcObserver(tracingRpcObserver()));

const nats = await startNats();
t.teardown(() => nats.stop());
const nc = await nats.connect();

const handlers = {
  async getOperator(req) {
    if (req.id === "missing") throw notFound("operator_not_found", "no such operator");
    if (req.id === "boom") throw new Error("broken");
    // Work done by the handler lands under its SERVER span.
    return withSpan("lookup", {}, async () => create(OperatorSchema, { id: req.id, name: "alice", role: "admin" }));
  },
} as Partial<Handlers<typeof AuthService>> as Handlers<typeof AuthService>;
for (const m of AuthService.methods)
  (handlers as Record<string, unknown>)[m.localName] ??= async () => {
    throw new Error("unused");
  };
const server = serveRpc({ nc, name: "auth", service: AuthService, handlers, log: silentLogger() });
t.teardown(() => server.stop());
const client = rpcClient(nc, "auth", AuthService, { timeoutMs: 2000 });

const named = (name: string, kind: SpanKind) =>
  exporter.getFinishedSpans().filter((s) => s.name === name && s.kind === kind);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

/** Calls under a root span so every span of the call shares its trace id. */
async function traced(id: string): Promise<{ root: string; trace: string; err: unknown }> {
  exporter.reset();
  let err: unknown;
  let root = "";
  let traceId = "";
  await withSpan("root", {}, async (span) => {
    root = span!.spanContext().spanId;
    traceId = span!.spanContext().traceId;
    await client.getOperator({ id }).catch((e: unknown) => (err = e));
  });
  return { root, trace: traceId, err };
}

t.test("a call is a CLIENT span whose traceparent makes the handler's SERVER span its child", async (t) => {
  const { root, trace } = await traced("01ABC");
  const [c] = named("auth/GetOperator", SpanKind.CLIENT);
  const [s] = named("auth/GetOperator", SpanKind.SERVER);
  const [inner] = named("lookup", SpanKind.INTERNAL);
  t.ok(c && s && inner, "client, server and handler spans exported");
  t.equal(c!.spanContext().traceId, trace);
  t.equal(parentOf(c!), root, "client span is a child of the caller's active span");
  t.equal(s!.spanContext().traceId, trace, "server span continues the caller's trace across NATS");
  t.equal(parentOf(s!), c!.spanContext().spanId);
  t.equal(parentOf(inner!), s!.spanContext().spanId, "handler work runs inside the server span");
  t.same(s!.attributes, { "rpc.system": "nats", "rpc.service": "auth", "rpc.method": "GetOperator" });
  t.equal(c!.status.code, SpanStatusCode.UNSET);
  t.equal(s!.status.code, SpanStatusCode.UNSET);
});

t.test("a refusal is an error for the caller but not a server fault", async (t) => {
  const { err } = await traced("missing");
  t.ok(err, "the call failed");
  const [c] = named("auth/GetOperator", SpanKind.CLIENT);
  const [s] = named("auth/GetOperator", SpanKind.SERVER);
  t.equal(c!.status.code, SpanStatusCode.ERROR);
  t.equal(c!.attributes["rpc.response.status_code"], "NOT_FOUND");
  t.equal(s!.status.code, SpanStatusCode.UNSET);
  t.equal(s!.attributes["rpc.response.status_code"], "NOT_FOUND");
});

t.test("an internal error marks both spans", async (t) => {
  await traced("boom");
  const [c] = named("auth/GetOperator", SpanKind.CLIENT);
  const [s] = named("auth/GetOperator", SpanKind.SERVER);
  t.equal(c!.status.code, SpanStatusCode.ERROR);
  t.equal(s!.status.code, SpanStatusCode.ERROR);
  t.equal(s!.attributes["rpc.response.status_code"], "INTERNAL");
});

t.test("a request nobody answers ends its CLIENT span in error", async (t) => {
  exporter.reset();
  const orphan = rpcClient(nc, "nobody", AuthService, { timeoutMs: 500 });
  const err = await orphan.getOperator({ id: "x" }).catch((e: unknown) => e);
  t.ok(err);
  const [c] = named("nobody/GetOperator", SpanKind.CLIENT);
  t.equal(c!.status.code, SpanStatusCode.ERROR);
  t.equal(c!.events[0]?.name, "exception", "the rejection is recorded");
});
