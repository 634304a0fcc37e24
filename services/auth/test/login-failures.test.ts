import t from "tap";
import { create, fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, CreateOperatorRequestSchema, isUnnotified, type AuditEvent } from "@orch/contracts";
import { createEvents, ulidGenerator } from "@orch/kit";
import { ed25519, eventually } from "@orch/kit/testing";
import { operatorHandlers } from "../src/handlers/operators.js";
import { loginFailureRecorder } from "../src/login-failures.js";
import { authTestbed, manualClock } from "./harness.js";

// The login-failure window with the real auth schema: once per window per operator, shared by every
// replica (the window row is in Postgres), and unknown keys are flagged so notify sends them nowhere.
const clock = manualClock();
const { nats, auth, systemCtx } = await authTestbed(t, { clock });
const observer = await nats.connect("observer");
const seen: AuditEvent[] = [];
observer.subscribe("audit.auth.login.failed", {
  callback: (_e, m) => void seen.push(fromBinary(AuditEventSchema, m.data)),
});
const WINDOW = 900_000;
const record = loginFailureRecorder({ events: auth.deps.events, clock, windowMs: WINDOW });
const ctx = systemCtx();
const addOperator = async (name: string) => {
  const key = ed25519();
  const req = create(CreateOperatorRequestSchema, { name, publicKey: key.publicKeyHex, role: "operator" });
  await operatorHandlers(auth.deps).createOperator(req, ctx);
  return key.publicKeyHex;
};
const eventsFor = (publicKey: string, n: number) =>
  eventually(() => {
    const evs = seen.filter((e) => (e.metadata as Record<string, unknown>).public_key === publicKey);
    return evs.length === n ? evs : undefined;
  });
const fail = (publicKey: string) => record({ reason: "invalid_signature", publicKey, remoteAddress: "192.0.2.1" });

t.test("a known operator: the first failure of a window is a warning, the rest are quiet", async (t) => {
  const dana = await addOperator("dana");
  for (let i = 0; i < 3; i++) await fail(dana);
  clock.advance(WINDOW - 1);
  await fail(dana);
  clock.advance(1);
  await fail(dana);
  const evs = await eventsFor(dana, 5);
  t.same(
    evs.map((e) => e.severity),
    ["warning", "info", "info", "info", "warning"],
    "one warning per window; the next window warns again",
  );
  t.same(
    evs.map((e) => isUnnotified(e.metadata as Record<string, unknown>)),
    [false, true, true, true, false],
  );
  t.equal(evs[0]!.target?.name, "dana");
  t.equal((evs[0]!.metadata as Record<string, unknown>).remote_address, "192.0.2.1");
});

t.test("unknown keys: info, flagged unnotified, no window row", async (t) => {
  const stranger = ed25519().publicKeyHex;
  await fail(stranger);
  await fail(stranger);
  const evs = await eventsFor(stranger, 2);
  t.ok(evs.every((e) => e.severity === "info"));
  t.ok(evs.every((e) => isUnnotified(e.metadata as Record<string, unknown>)));
  t.equal(evs[0]!.target?.type, "public_key");
  const windows = await auth.deps.pool.query("SELECT count(*)::int AS n FROM login_failure_windows");
  t.equal(windows.rows[0].n, 1, "only dana's");
});

t.test("two replicas failing the same operator at once open one window", async (t) => {
  const erin = await addOperator("erin");
  // Another replica: its own events object (own ids) on the same database.
  const otherEvents = createEvents({ pool: auth.deps.pool, ids: ulidGenerator(clock), clock, relay: auth.deps.relay! });
  const other = loginFailureRecorder({ events: otherEvents, clock, windowMs: WINDOW });
  const failOther = (publicKey: string) => other({ reason: "invalid_signature", publicKey, remoteAddress: "" });
  await Promise.all([fail(erin), failOther(erin), fail(erin), failOther(erin), fail(erin), failOther(erin)]);
  const evs = await eventsFor(erin, 6);
  t.equal(evs.filter((e) => e.severity === "warning").length, 1, "exactly one warning");
});
