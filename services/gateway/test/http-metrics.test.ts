import { createMetricsRegistry, systemClock, ulidGenerator } from "@orch/kit";
import { silentLogger, startNats } from "@orch/kit/testing";
import t from "tap";
import { buildGateway } from "../src/app.js";
import { gatewayConfigSchema } from "../src/config.js";
import { statusClass } from "../src/http-metrics.js";

// The real gateway on a private NATS (no services behind it: only what the gateway answers itself).
const nats = await startNats();
t.teardown(() => nats.stop());
const registry = createMetricsRegistry("gateway");
const config = gatewayConfigSchema.parse({ http: { port: 0, host: "127.0.0.1" }, gateway: { services: ["auth"] } });
const { app, tokens } = await buildGateway({
  config,
  log: silentLogger(),
  nc: await nats.connect("gateway"),
  clock: systemClock,
  ids: ulidGenerator(systemClock),
  metrics: registry,
});
await app.listen({ port: 0, host: "127.0.0.1" });
t.teardown(async () => {
  await app.close();
  tokens.stop();
});
const addr = app.server.address();
const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;

async function requests(labels: Record<string, string>): Promise<number> {
  const values = (await registry.getSingleMetric("orch_http_requests_total")!.get()).values;
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want))
    .reduce((n, v) => n + v.value, 0);
}

t.test("unit: status classes", async (t) => {
  t.same([200, 204, 301, 404, 429, 503, 0].map(statusClass), ["2xx", "2xx", "3xx", "4xx", "4xx", "5xx", "other"]);
});

t.test("a route with ids is labelled by its template, never the raw URL", async (t) => {
  const res = await fetch(`${url}/api/v1/agents/01HZZZZZZZZZZZZZZZZZZZZZZZ`);
  t.equal(res.status, 401);
  t.equal(await requests({ route: "/api/v1/agents/:node_id", method: "GET", status_class: "4xx" }), 1);
  const text = await registry.metrics();
  t.notMatch(text, /01HZZZZZZZZZZZZZZZZZZZZZZZ/);
  t.match(text, /orch_http_request_duration_seconds_count\{[^}]*route="\/api\/v1\/agents\/:node_id"[^}]*\} 1\n/);
});

t.test("a success is 2xx on its route", async (t) => {
  t.equal((await fetch(`${url}/api/v1/openapi.json`)).status, 200);
  t.equal(await requests({ route: "/api/v1/openapi.json", method: "GET", status_class: "2xx" }), 1);
});

t.test("requests no route matched share one series", async (t) => {
  // (Unknown GET paths outside /api may be the console's pages; the API answers 404.)
  t.equal((await fetch(`${url}/api/v1/no/such/thing/123`)).status, 404);
  t.equal((await fetch(`${url}/another/456`, { method: "POST" })).status, 404);
  t.equal(await requests({ route: "unmatched", status_class: "4xx" }), 2);
  t.notMatch(await registry.metrics(), /no\/such|another\/456/);
});

t.test("the gateway's catalogue metrics are listed with HELP and TYPE", async (t) => {
  const text = await registry.metrics();
  for (const name of ["orch_http_requests_total", "orch_http_request_duration_seconds"]) {
    t.match(text, new RegExp(`# HELP ${name} `));
    t.match(text, new RegExp(`# TYPE ${name} (counter|histogram)`));
  }
});
