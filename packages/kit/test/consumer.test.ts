import { DeliverPolicy, type JsMsg, jetstreamManager } from "@nats-io/jetstream";
import { backoff, createDurableConsumer, type DurableConsumerOptions, PoisonMessage } from "@orch/kit";
import { eventually, silentLogger, startNats } from "@orch/kit/testing";
import t from "tap";

// Against a real nats-server (private to this file, as every test file here): each test has its
// own stream, deleted at its end.
const nats = await startNats();
const nc = await nats.connect("consumer-test");
const jsm = await jetstreamManager(nc);
t.teardown(() => nats.stop());

let n = 0;
async function freshStream(t: { teardown(fn: () => unknown): void }): Promise<{ stream: string; subject: string }> {
  const stream = `CONSUMER_TEST_${++n}_${process.pid}`;
  const subject = `ctest.${n}.>`;
  await jsm.streams.add({ name: stream, subjects: [subject] });
  t.teardown(() => jsm.streams.delete(stream).catch(() => {}));
  return { stream, subject: subject.replace(">", "x") };
}

const publish = (subject: string, body: string) => nc.publish(subject, new TextEncoder().encode(body));
const text = (m: JsMsg) => new TextDecoder().decode(m.data);
const fast = backoff({ initialMs: 20, maxMs: 100 });

function consumerOf(
  stream: string,
  handling:
    | Pick<Extract<DurableConsumerOptions, { handle: unknown }>, "handle" | "nakDelayMs">
    | Pick<Extract<DurableConsumerOptions, { receive: unknown }>, "receive">,
) {
  const c = createDurableConsumer({
    nc,
    log: silentLogger(),
    consumer: { stream, durable: "worker", deliverPolicy: DeliverPolicy.All, ackWaitMs: 30_000, maxAckPending: 64 },
    maxMessages: 16,
    policy: fast,
    ...handling,
  } as DurableConsumerOptions);
  return c;
}

const pending = async (stream: string) => (await jsm.consumers.info(stream, "worker")).num_ack_pending;

t.test("delivers every message once, in order, and acknowledges it", async (t) => {
  const { stream, subject } = await freshStream(t);
  const seen: string[] = [];
  const c = consumerOf(stream, { handle: async (m) => void seen.push(text(m)) });
  t.teardown(() => c.stop());
  for (const b of ["a", "b", "c"]) publish(subject, b);
  c.start();
  await eventually(() => seen.length >= 3);
  t.same(seen, ["a", "b", "c"]);
  await eventually(async () => (await pending(stream)) === 0);
  const info = await jsm.consumers.info(stream, "worker");
  t.equal(info.num_pending, 0);
  t.equal(info.num_redelivered, 0);
});

t.test("a handler error naks the message, which is redelivered after the delay", async (t) => {
  const { stream, subject } = await freshStream(t);
  const tries: Array<[string, number]> = [];
  const c = consumerOf(stream, {
    nakDelayMs: 50,
    handle: async (m) => {
      tries.push([text(m), m.info.deliveryCount]);
      if (m.info.deliveryCount === 1) throw new Error("database away");
    },
  });
  t.teardown(() => c.stop());
  c.start();
  publish(subject, "x");
  await eventually(() => tries.length >= 2);
  t.same(tries.slice(0, 2), [
    ["x", 1],
    ["x", 2],
  ]);
  await eventually(async () => (await pending(stream)) === 0);
});

t.test("a poison message is terminated, never redelivered, and does not block the next", async (t) => {
  const { stream, subject } = await freshStream(t);
  const seen: string[] = [];
  const c = consumerOf(stream, {
    nakDelayMs: 10,
    handle: async (m) => {
      seen.push(text(m));
      if (text(m) === "bad") throw new PoisonMessage("not an event");
    },
  });
  t.teardown(() => c.stop());
  c.start();
  publish(subject, "bad");
  publish(subject, "good");
  await eventually(() => seen.includes("good"));
  await eventually(async () => (await pending(stream)) === 0);
  await new Promise((r) => setTimeout(r, 200));
  t.same(seen, ["bad", "good"]);
});

t.test("resumes after the consumer is deleted under it, recreating it", async (t) => {
  const { stream, subject } = await freshStream(t);
  const seen: string[] = [];
  const c = consumerOf(stream, { handle: async (m) => void seen.push(text(m)) });
  t.teardown(() => c.stop());
  c.start();
  publish(subject, "before");
  await eventually(() => seen.includes("before"));
  await eventually(async () => (await pending(stream)) === 0);
  await jsm.consumers.delete(stream, "worker");
  publish(subject, "after");
  // The new consumer starts from the beginning (DeliverPolicy.All): the handler must be idempotent.
  await eventually(() => seen.includes("after"), 20_000);
  t.ok(await jsm.consumers.info(stream, "worker"), "the durable exists again");
});

t.test("resumes after the stream itself is recreated", async (t) => {
  const { stream, subject } = await freshStream(t);
  const seen: string[] = [];
  const c = createDurableConsumer({
    nc,
    log: silentLogger(),
    consumer: { stream, durable: "worker", deliverPolicy: DeliverPolicy.All, ackWaitMs: 30_000, maxAckPending: 64 },
    ensureStream: async () => {
      await jsm.streams.info(stream).catch(() => jsm.streams.add({ name: stream, subjects: [subject] }));
    },
    maxMessages: 16,
    policy: fast,
    handle: async (m) => void seen.push(text(m)),
  });
  t.teardown(() => c.stop());
  c.start();
  publish(subject, "one");
  await eventually(() => seen.includes("one"));
  await jsm.streams.delete(stream);
  await eventually(async () => (await jsm.streams.info(stream)) && true, 20_000);
  await eventually(async () => (await jsm.consumers.info(stream, "worker")) && true, 20_000);
  publish(subject, "two");
  await eventually(() => seen.includes("two"), 20_000);
  t.pass("consumed from the recreated stream");
});

t.test("stop() settles the message in hand, then nothing more is handled", async (t) => {
  const { stream, subject } = await freshStream(t);
  const seen: string[] = [];
  let release: () => void = () => {};
  const c = consumerOf(stream, {
    handle: async (m) => {
      seen.push(text(m));
      if (text(m) === "slow") await new Promise<void>((r) => (release = r));
    },
  });
  c.start();
  publish(subject, "slow");
  await eventually(() => seen.includes("slow"));
  const stopped = c.stop();
  let done = false;
  void stopped.then(() => (done = true));
  await new Promise((r) => setTimeout(r, 50));
  t.notOk(done, "stop waits for the handler");
  release();
  await stopped;
  await eventually(async () => (await pending(stream)) === 0);
  publish(subject, "late");
  await new Promise((r) => setTimeout(r, 300));
  t.same(seen, ["slow"]);
  t.equal((await jsm.consumers.info(stream, "worker")).num_pending, 1, "the late message waits in the stream");
});

t.test("receive mode leaves acknowledging to the receiver", async (t) => {
  const { stream, subject } = await freshStream(t);
  const held: JsMsg[] = [];
  const c = consumerOf(stream, { receive: (m) => void held.push(m) });
  t.teardown(() => c.stop());
  c.start();
  publish(subject, "a");
  publish(subject, "b");
  await eventually(() => held.length >= 2);
  t.equal(await pending(stream), 2, "nothing acknowledged by the helper");
  for (const m of held) m.ack();
  await eventually(async () => (await pending(stream)) === 0);
});
