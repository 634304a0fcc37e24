import { create } from "@bufbuild/protobuf";
import { AuthService, OperatorSchema } from "@orch/contracts";
import { addRpcObserver, notFound, rpcClient, serveRpc, type Handlers } from "@orch/kit";
import { silentLogger, startNats } from "@orch/kit/testing";
import { Registry } from "prom-client";
import t from "tap";
import { rpcMetricsObserver } from "../src/metrics/rpc.js";

// On a real nats-server: the observer sees what serveRpc answered and what rpcClient got back.
const nats = await startNats();
t.teardown(() => nats.stop());
const nc = await nats.connect();
const registry = new Registry();
t.teardown(addRpcObserver(rpcMetricsObserver(registry)));

const handlers = {
  async getOperator(req) {
    if (req.id === "missing") throw notFound("operator_not_found", "no such operator", { id: req.id });
    if (req.id === "slow") await new Promise((r) => setTimeout(r, 300));
    return create(OperatorSchema, { id: req.id, name: "alice", role: "admin", createdAt: 1 });
  },
} as Partial<Handlers<typeof AuthService>> as Handlers<typeof AuthService>;
// Only getOperator is exercised; the others answer INTERNAL if called.
for (const m of AuthService.methods)
  (handlers as Record<string, unknown>)[m.localName] ??= async () => {
    throw new Error("unused");
  };
const server = serveRpc({ nc, name: "auth", service: AuthService, handlers, log: silentLogger() });
t.teardown(() => server.stop());
const client = rpcClient(nc, "auth", AuthService, { timeoutMs: 2000 });

/** The histogram's observation count for exactly these labels (0 when none). */
async function count(name: string, labels: Record<string, string>): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) return 0;
  const v = (await m.get()).values.find(
    (x) =>
      (x as { metricName?: string }).metricName === `${name}_count` &&
      Object.entries(labels).every(([k, want]) => (x.labels as Record<string, unknown>)[k] === want),
  );
  return v?.value ?? 0;
}

const getOperator = { rpc_service: "auth", rpc_method: "GetOperator" };

t.test("a success is code ok on both sides", async (t) => {
  await client.getOperator({ id: "01A" });
  t.equal(await count("orch_rpc_client_duration_seconds", { ...getOperator, code: "ok" }), 1);
  t.equal(await count("orch_rpc_server_duration_seconds", { ...getOperator, code: "ok" }), 1);
});

t.test("an error answer carries its code on both sides", async (t) => {
  await t.rejects(client.getOperator({ id: "missing" }));
  t.equal(await count("orch_rpc_client_duration_seconds", { ...getOperator, code: "NOT_FOUND" }), 1);
  t.equal(await count("orch_rpc_server_duration_seconds", { ...getOperator, code: "NOT_FOUND" }), 1);
});

t.test("a request nobody answers in time is code timeout", async (t) => {
  await t.rejects(client.getOperator({ id: "slow" }, { timeoutMs: 50 }));
  t.equal(await count("orch_rpc_client_duration_seconds", { ...getOperator, code: "timeout" }), 1);
});

t.test("a request to a service nobody serves is code no_responders", async (t) => {
  const nobody = rpcClient(nc, "nobody", AuthService, { timeoutMs: 2000 });
  await t.rejects(nobody.getOperator({ id: "01A" }));
  t.equal(
    await count("orch_rpc_client_duration_seconds", {
      rpc_service: "nobody",
      rpc_method: "GetOperator",
      code: "no_responders",
    }),
    1,
  );
});

t.test("labels name services and methods only, never request data", async (t) => {
  const text = await registry.metrics();
  t.notMatch(text, /01A|missing|slow/);
  t.match(text, /# TYPE orch_rpc_server_duration_seconds histogram/);
  t.match(text, /# TYPE orch_rpc_client_duration_seconds histogram/);
});
