import t from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager, AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { AuditEventSchema } from "@orch/contracts";
import { ensureAuditStream } from "@orch/kit";
import { ed25519, eventually } from "@orch/kit/testing";
import { operatorHandlers } from "../src/handlers/operators.js";
import { authTestbed } from "./harness.js";

// A change made while NATS is down is committed with its event; the event reaches the bus exactly
// once after NATS returns.
const { nats, auth, systemCtx } = await authTestbed(t);

t.test("outbox survives a NATS outage and publishes exactly once", async (t) => {
  const nc = await nats.connect("observer");
  await ensureAuditStream(nc, { replicas: 1, maxAgeDays: 1 });
  // The bootstrap admin's event is already on the stream; count only what follows.
  await eventually(async () => Number((await auth.deps.pool.query("SELECT count(*) FROM outbox")).rows[0].count) === 0);

  await nats.kill();
  const handlers = operatorHandlers(auth.deps);
  const ctx = systemCtx("r1", 10_000);
  const op = await handlers.createOperator(
    {
      $typeName: "orch.v1.CreateOperatorRequest",
      name: "offline-op",
      publicKey: ed25519().publicKeyHex,
      role: "operator",
      agentSelector: "",
    },
    ctx,
  );
  t.equal(
    Number((await auth.deps.pool.query("SELECT count(*) FROM outbox")).rows[0].count),
    1,
    "event waits in the outbox",
  );
  t.equal(
    (await auth.deps.pool.query("SELECT name FROM operators WHERE id = $1", [op.id])).rowCount,
    1,
    "the change is committed",
  );

  await nats.restart();
  await eventually(
    async () => Number((await auth.deps.pool.query("SELECT count(*) FROM outbox")).rows[0].count) === 0,
    20_000,
  );

  const obs = await nats.connect("observer2");
  const jsm = await jetstreamManager(obs);
  await jsm.consumers.add("AUDIT", {
    durable_name: "t",
    ack_policy: AckPolicy.None,
    deliver_policy: DeliverPolicy.All,
    filter_subject: "audit.operator.created",
  });
  const consumer = await jetstream(obs).consumers.get("AUDIT", "t");
  const got: string[] = [];
  const batch = await consumer.fetch({ max_messages: 10, expires: 2000 });
  for await (const m of batch) {
    const ev = fromBinary(AuditEventSchema, m.data);
    if (ev.target?.name === "offline-op") got.push(ev.id);
  }
  t.equal(got.length, 1, "exactly one audit.operator.created for the change");
});

t.test("a re-sent event (crash between publish and delete) is deduplicated by Nats-Msg-Id", async (t) => {
  const obs = await nats.connect("dup");
  const js = jetstream(obs);
  const a = await js.publish("audit.operator.created", new Uint8Array([1]), { msgID: "01DUPLICATEDUPLICATEDUPLIC" });
  const b = await js.publish("audit.operator.created", new Uint8Array([1]), { msgID: "01DUPLICATEDUPLICATEDUPLIC" });
  t.equal(b.duplicate, true);
  t.equal(a.seq, b.seq);
});
