import { createTestDatabase, startNats } from "@orch/kit/testing";
import { eventFactory, publisher, startAudit, countRows } from "./harness.js";
const nats = await startNats();
const db = await createTestDatabase();
const nc = await nats.connect("p");
const publish = await publisher(nc);
const event = eventFactory();
const N = 40000;
const evs = Array.from({ length: N }, (_, i) => event({ type: "agent.connected", actor: { id: "node-1", name: "web-1", type: "agent" }, target: { id: "node-1", name: "web-1", type: "agent" }, metadata: { i } }));
let t = Date.now();
await publish(evs, 1000);
console.log("published", N, "in", Date.now() - t, "ms");
for (const bs of [Number(process.argv[2] ?? 500)]) {
  const svc = await startAudit(nats, db, { audit: { batch_size: bs } });
  t = Date.now();
  while ((await countRows(svc.deps.pool)) < N) await new Promise((r) => setTimeout(r, 50));
  console.log("batch", bs, "drained", N, "in", Date.now() - t, "ms →", Math.round(N / ((Date.now() - t) / 1000)), "/s");
  await svc.stop();
}
await db.drop();
await nats.stop();
