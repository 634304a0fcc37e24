import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import t from "tap";
import { jetstreamManager } from "@nats-io/jetstream";
import { createTestDatabase, ed25519, eventually, startNats, startSystem } from "@orch/kit/testing";

// examples/audit-consumer as an integrator runs it: a real process with its own durable consumer
// on the AUDIT stream of a real stack. It prints the events the API's changes produce, and after
// a restart resumes where it left off: nothing printed twice, nothing published meanwhile missed.
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CONSUMER = fileURLToPath(new URL("../../examples/audit-consumer/consume.ts", import.meta.url));

const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const system = await startSystem({ owner: t, nats, db, services: ["auth", "gateway"] });
const children: ChildProcess[] = [];
t.teardown(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});
const token = await system.login(system.admin);
// An integrator's consumer connects with a bus user of its own (here the tests' one).
const creds = nats.credentials("audit-example")!;
const integrator = { NATS_USER: creds.user, NATS_PASSWORD: creds.password };

interface Printed {
  id: string;
  event_type: string;
  severity: string;
  actor: { name: string };
  target: { name: string };
}

function runConsumer() {
  const child = spawn(
    process.execPath,
    ["--conditions=orch-source", "--import=tsx", CONSUMER, "--durable", "e2e-example"],
    { cwd: ROOT, env: { ...process.env, NATS_URL: nats.url, ...integrator }, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    events: () =>
      out
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Printed),
    stderr: () => err,
    async stop() {
      child.kill("SIGTERM");
      return exited;
    },
  };
}

const created = (name: string) => (e: Printed) => e.event_type === "operator.created" && e.target.name === name;

async function addOperator(name: string) {
  const r = await system.api("POST", "/api/v1/operators", {
    token,
    body: { name, public_key: ed25519().publicKeyHex },
  });
  if (r.status !== 201) throw new Error(`POST /operators ${r.status}: ${r.text}`);
}

t.test("the example prints each event once and resumes after a restart", async (t) => {
  const first = runConsumer();
  await eventually(() => first.stderr().includes("consuming AUDIT as e2e-example"), 20_000);
  await addOperator("alice");
  await eventually(() => first.events().some(created("alice")), 20_000);
  const alice = first.events().find(created("alice"))!;
  t.match(alice, {
    id: /^[0-9A-HJKMNP-TV-Z]{26}$/,
    severity: "info",
    actor: { name: "admin" },
    target: { name: "alice" },
  });
  t.equal(await first.stop(), 0, "stops cleanly on SIGTERM");
  // Redelivery of an unacked message waits for ack_wait, so "not printed again" alone would not
  // prove the acks: the server's record of the durable consumer does.
  const jsm = await jetstreamManager(await nats.connect("e2e-inspect"));
  const info = await jsm.consumers.info("AUDIT", "e2e-example");
  t.equal(info.num_ack_pending, 0, "every printed event was acked before the process left");
  t.equal(info.ack_floor.stream_seq, info.delivered.stream_seq, "the ack floor is the last delivered event");
  t.equal(info.config.filter_subject, "audit.>", "default filter: every event");

  // Published while no consumer runs: the durable consumer holds it until the next start.
  await addOperator("bob");
  const second = runConsumer();
  await eventually(() => second.events().some(created("bob")), 20_000);
  // Events arrive in stream order, so a redelivered alice would have come before bob.
  t.notOk(
    second.events().some((e) => e.id === alice.id),
    "alice's event, printed and acked by the first run, is not printed again",
  );
  t.notOk(
    second.events().some((e) => first.events().some((f) => f.id === e.id)),
    "nothing the first run printed is printed again",
  );
  t.equal(await second.stop(), 0);
});
