import { createPool, migrate } from "@orch/kit";
import { createTestDatabase } from "@orch/kit/testing";
import { Registry } from "prom-client";
import t from "tap";
import { registerOutboxMetrics } from "../src/metrics/outbox.js";

// Against a real Postgres database with the kit's outbox table.
const db = await createTestDatabase("orch_metrics");
t.teardown(() => db.drop());
const pool = createPool({ url: db.url, schema: "svc" });
t.teardown(() => pool.end());
await migrate(pool, "svc", null);
const registry = new Registry();
registerOutboxMetrics(registry, pool);

async function value(name: string): Promise<number | undefined> {
  return (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
}

t.test("an empty outbox: no backlog, no lag", async (t) => {
  await registry.metrics();
  t.equal(await value("orch_outbox_backlog"), 0);
  t.equal(await value("orch_outbox_relay_lag_seconds"), 0);
});

t.test("unrelayed rows: their count, and the age of the oldest", async (t) => {
  await pool.query(
    `INSERT INTO outbox (id, subject, payload, created_at) VALUES
       ('01', 'audit.x', '\\x00', now() - interval '90 seconds'),
       ('02', 'audit.x', '\\x00', now() - interval '5 seconds'),
       ('03', 'audit.x', '\\x00', now())`,
  );
  const text = await registry.metrics();
  t.match(text, /# TYPE orch_outbox_backlog gauge\norch_outbox_backlog 3\n/);
  const lag = (await value("orch_outbox_relay_lag_seconds"))!;
  t.ok(lag >= 90 && lag < 600, `lag ${lag} is the oldest row's age`);
  await pool.query("DELETE FROM outbox");
  await registry.metrics();
  t.equal(await value("orch_outbox_backlog"), 0);
  t.equal(await value("orch_outbox_relay_lag_seconds"), 0);
});

t.test("a database that cannot answer does not fail the scrape", async (t) => {
  const broken = new Registry();
  registerOutboxMetrics(broken, { query: () => Promise.reject(new Error("down")) } as never);
  t.match(await broken.metrics(), /# TYPE orch_outbox_backlog gauge/);
});
