// A durable consumer of the orchestrator's audit events: prints each event as one JSON line on
// stdout and acks it afterwards, so a restart resumes after the last event it printed.
// Usage and options: examples/audit-consumer/README.md.
import { parseArgs } from "node:util";
import { fromBinary, toJson } from "@bufbuild/protobuf";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { AuditEventSchema } from "@orch/contracts";

/** The stream the orchestrator publishes its audit events to (see /api/v1/asyncapi.json). */
const STREAM = "AUDIT";

const { values: opts } = parseArgs({
  options: {
    server: { type: "string", default: process.env.NATS_URL ?? "nats://127.0.0.1:4222" },
    user: { type: "string", default: process.env.NATS_USER },
    password: { type: "string", default: process.env.NATS_PASSWORD },
    durable: { type: "string", default: process.env.AUDIT_DURABLE ?? "audit-example" },
    filter: { type: "string", default: process.env.AUDIT_FILTER ?? "audit.>" },
    // Only for a consumer created now; an existing one resumes where it left off.
    deliver: { type: "string", default: process.env.AUDIT_DELIVER ?? "all" },
  },
});
if (opts.deliver !== "all" && opts.deliver !== "new") throw new Error("--deliver is all or new");

const nc = await connect({
  servers: opts.server,
  name: `audit-consumer:${opts.durable}`,
  // With the orchestrator's bus permissions a user may only read replies on its own inbox prefix.
  ...(opts.user ? { user: opts.user, pass: opts.password ?? "", inboxPrefix: `_INBOX_${opts.user}` } : {}),
});
const jsm = await jetstreamManager(nc);

// Created once with explicit acks; afterwards the server keeps its position (the last acked
// message) under the durable name, whichever process or host opens it next.
const existing = await jsm.consumers.info(STREAM, opts.durable).catch(() => undefined);
if (!existing) {
  await jsm.consumers.add(STREAM, {
    durable_name: opts.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: opts.deliver === "new" ? DeliverPolicy.New : DeliverPolicy.All,
    filter_subject: opts.filter,
  });
} else if (existing.config.filter_subject !== opts.filter) {
  console.error(`consumer ${opts.durable} exists with filter ${existing.config.filter_subject}; keeping it`);
}

const consumer = await jetstream(nc).consumers.get(STREAM, opts.durable);
const messages = await consumer.consume();
// Stop pulling, finish (print and ack) the message in hand, then leave.
const stop = () => messages.stop();
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
console.error(`consuming ${STREAM} as ${opts.durable} (filter ${opts.filter})`);

const print = (line: string) => new Promise<void>((resolve) => process.stdout.write(`${line}\n`, () => resolve()));

for await (const m of messages) await handle(m);

async function handle(m: JsMsg) {
  let line: string;
  try {
    const event = fromBinary(AuditEventSchema, m.data);
    line = JSON.stringify(toJson(AuditEventSchema, event, { useProtoFieldName: true, alwaysEmitImplicit: true }));
  } catch (err) {
    // Not an AuditEvent: redelivery cannot fix it, so stop it coming back.
    console.error(`undecodable message on ${m.subject} (seq ${m.seq}): ${(err as Error).message}`);
    m.term();
    return;
  }
  await print(line);
  // Acked only once printed, and confirmed by the server: a crash before this line means the
  // event comes again (same `id`), never that it is lost.
  await m.ackAck();
}

await nc.drain();
