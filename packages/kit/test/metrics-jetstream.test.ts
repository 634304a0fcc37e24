import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { registerConsumerMetrics } from "@orch/kit";
import { startNats } from "@orch/kit/testing";
import { Registry } from "prom-client";
import t from "tap";

// On a real nats-server: the gauges read the consumer's info at scrape time.
const nats = await startNats();
t.teardown(() => nats.stop());
const nc = await nats.connect();
const jsm = await jetstreamManager(nc);
await jsm.streams.add({ name: "MTEST", subjects: ["mtest.>"] });
await jsm.consumers.add("MTEST", { durable_name: "worker", ack_policy: AckPolicy.Explicit, ack_wait: 60e9 });
await jsm.consumers.add("MTEST", { durable_name: "idle", ack_policy: AckPolicy.Explicit });
const registry = new Registry();
registerConsumerMetrics(registry, nc, { stream: "MTEST", durable: "worker" });
registerConsumerMetrics(registry, nc, { stream: "MTEST", durable: "idle" });

async function gauge(name: string, consumer: string): Promise<number | undefined> {
  await registry.metrics();
  const values = (await registry.getSingleMetric(name)!.get()).values;
  return values.find((v) => v.labels.stream === "MTEST" && v.labels.consumer === consumer)?.value;
}

t.test("pending counts undelivered and unacknowledged messages, per consumer", async (t) => {
  const js = jetstream(nc);
  for (let i = 0; i < 3; i++) await js.publish("mtest.a", new Uint8Array([i]));
  t.equal(await gauge("orch_consumer_pending", "worker"), 3);
  t.equal(await gauge("orch_consumer_pending", "idle"), 3);
  // Two fetched and not acknowledged: still pending (ack pending), none redelivered yet.
  const c = await js.consumers.get("MTEST", "worker");
  const got = await c.fetch({ max_messages: 2, expires: 2000 });
  const msgs = [];
  for await (const m of got) msgs.push(m);
  t.equal(msgs.length, 2);
  t.equal(await gauge("orch_consumer_pending", "worker"), 3);
  t.equal(await gauge("orch_consumer_redelivered", "worker"), 0);
  // A nak makes the message come back: counted as redelivered once delivered again.
  msgs[0]!.nak();
  // The server handles acks apart from pulls: the third, never-delivered message may come first.
  let redelivered = false;
  for (let i = 0; i < 5 && !redelivered; i++) {
    const again = await c.fetch({ max_messages: 1, expires: 2000 });
    for await (const m of again) {
      if (m.info.redelivered) redelivered = true;
      else msgs.push(m);
    }
  }
  t.ok(redelivered, "the nak'd message came back");
  t.equal(await gauge("orch_consumer_redelivered", "worker"), 1);
  for (const m of msgs) m.ack();
});

t.test("a consumer that does not exist does not fail the scrape", async (t) => {
  const r = new Registry();
  registerConsumerMetrics(r, nc, { stream: "MTEST", durable: "gone" });
  t.match(await r.metrics(), /# TYPE orch_consumer_pending gauge/);
});
