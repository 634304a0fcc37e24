import t from "tap";
import { readFileSync } from "node:fs";
import { eventually } from "@orch/kit/testing";
import { SPAN_KIND, startOtlpReceiver, type ReceivedSpan } from "./lib/otlp-receiver.js";
import { startStateStack } from "./lib/state-stack.js";

// One apply is one trace across every process it crosses: the gateway's route span, the state
// service's RPC server span and its queries, the agents service's relay over the agent link, and
// the orch-agent's span per resource, all exported over OTLP/HTTP to a receiver in this process.
// Needs `npm run build` (dist/main.js of the services and of agent/).
const receiver = await startOtlpReceiver();
t.teardown(() => receiver.stop());
const otel = {
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
  // Export within a fraction of a second rather than the default 5 s batches.
  OTEL_BSP_SCHEDULE_DELAY: "200",
};
const { linkPort, system, agents, dir } = await startStateStack(t, { name: "tracing", env: otel });
const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`], { env: otel });
const nodeId = await agent.nodeId();
await eventually(async () => (await api("GET", `/agents/${nodeId}`)).body?.connected === true, 20_000);
await must(api("POST", `/agents/${nodeId}`, { status: "approved", name: "traced-1" }), 200);
await must(
  api("POST", "/modules", {
    name: "motd",
    content: [
      "name: motd",
      "resources:",
      "  - id: banner",
      "    type: file",
      `    path: ${dir}/motd`,
      '    content: "traced\\n"',
      "",
    ].join("\n"),
  }),
  201,
);

/** The span's parent chain up to the root, by name (e.g. for a failure message). */
const chain = (spans: ReceivedSpan[], s: ReceivedSpan): string[] => {
  const parent = spans.find((p) => p.spanId === s.parentSpanId);
  return parent ? [...chain(spans, parent), `${s.service}:${s.name}`] : [`${s.service}:${s.name}`];
};

t.test("an apply is one trace from the gateway route to the orch-agent's resource execution", async (t) => {
  const apply = await must(api("POST", `/agents/${nodeId}/apply?wait=60`, { modules: ["motd"] }), 200);
  t.equal(apply.status, "succeeded");
  t.equal(readFileSync(`${dir}/motd`, "utf8"), "traced\n");

  const isRoute = (s: ReceivedSpan) =>
    s.service === "gateway" &&
    s.kind === SPAN_KIND.server &&
    String(s.attributes["http.route"] ?? "").endsWith("/agents/:node_id/apply");
  const root = await eventually(() => receiver.spans.find(isRoute), 15_000);

  const wanted: Record<string, (s: ReceivedSpan) => boolean> = {
    "state RunAgent server span": (s) =>
      s.service === "state" && s.kind === SPAN_KIND.server && /RunAgent/.test(s.name),
    "state pg query": (s) => s.service === "state" && s.name.startsWith("pg."),
    "agents relay": (s) => s.service === "agents" && s.name === "agents.relay Execute" && s.kind === SPAN_KIND.client,
    "orch-agent server span": (s) =>
      s.service === "orch-agent" && s.name === "agent Execute" && s.kind === SPAN_KIND.server,
    "orch-agent resource span": (s) =>
      s.service === "orch-agent" &&
      s.name === "resource.apply" &&
      s.attributes["orch.resource.id"] === "banner" &&
      s.attributes["orch.resource.type"] === "file" &&
      s.attributes["orch.resource.result"] === "changed",
  };
  // Spans arrive in batches from five processes: wait until the trace is whole, not just started.
  const spans = await eventually(() => {
    const all = receiver.trace(root.traceId);
    const complete = Object.values(wanted).every((pred) => all.some(pred));
    const linked = all.every((s) => s === root || all.some((p) => p.spanId === s.parentSpanId));
    return complete && linked ? all : undefined;
  }, 20_000).catch(() => receiver.trace(root.traceId));

  for (const [what, pred] of Object.entries(wanted)) t.ok(spans.some(pred), `the trace has the ${what}`);
  t.equal(root.parentSpanId, "", "the gateway's route span is the root");
  t.same(
    spans
      .filter((s) => s !== root && !spans.some((p) => p.spanId === s.parentSpanId))
      .map((s) => `${s.service}:${s.name}`),
    [],
    "every other span's parent is in the trace",
  );
  // The resource's ancestry crosses the processes in the order the request did.
  const resource = spans.find(wanted["orch-agent resource span"]!);
  const path = resource ? chain(spans, resource) : [];
  t.same(
    path.map((n) => n.split(":")[0]).filter((svc, i, a) => svc !== a[i - 1]),
    ["gateway", "state", "agents", "orch-agent"],
    `the resource span descends from the route through state and agents: ${path.join(" > ")}`,
  );
});

t.test("request spans never record a query string (credentials such as a terminal ticket travel there)", async (t) => {
  const marker = "q-marker-5ecr3t";
  t.equal((await api("GET", `/audit?limit=1&type=${marker}`)).status < 500, true);
  const span = await eventually(
    () => receiver.spans.find((s) => s.service === "gateway" && s.name === "GET /api/v1/audit"),
    15_000,
  );
  t.equal(span.attributes["url.path"], "/api/v1/audit", "the path only");
  t.notOk(
    receiver.spans.some((s) => JSON.stringify(s).includes(marker)),
    "no span of any process holds the query's values",
  );
});
