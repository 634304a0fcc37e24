import t from "tap";
import { create } from "@bufbuild/protobuf";
import { AuthService, IDEMPOTENCY_TTL_MS, OperatorSchema } from "@orch/contracts";
import {
  type OrchError,
  createIdempotencyStore,
  createPool,
  migrate,
  notFound,
  rpcClient,
  serveRpc,
  type CallOptions,
  type Handlers,
} from "@orch/kit";
import { createTestDatabase, silentLogger, startNats } from "@orch/kit/testing";

// The kit's idempotent RPCs on a real NATS and Postgres: a serveRpc given the store replays; without
// one (a service with no database) the key is simply ignored.
const nats = await startNats();
const db = await createTestDatabase();
const pool = createPool({ url: db.url, schema: "kit_idem", max: 4 });
await migrate(pool, "kit_idem", null);
let now = Date.now();
const clock = { now: () => now };
const log = silentLogger();
const store = createIdempotencyStore({ pool, log, clock });
const withStore = await nats.connect("with-store");
const withoutStore = await nats.connect("without-store");

let runs = 0;
let gate: Promise<void> | undefined;
const handlers = {
  async getOperator(req) {
    runs++;
    if (gate) await gate;
    if (req.id === "missing") throw notFound("operator_not_found", "no such operator");
    if (req.id === "boom") throw new Error("transient");
    return create(OperatorSchema, { id: req.id, name: `run-${runs}` });
  },
} as Partial<Handlers<typeof AuthService>> as Handlers<typeof AuthService>;
for (const m of AuthService.methods) (handlers as Record<string, unknown>)[m.localName] ??= async () => ({});

const servers = [
  serveRpc({ nc: withStore, name: "idem", service: AuthService, handlers, log, idempotency: store }),
  serveRpc({ nc: withoutStore, name: "plain", service: AuthService, handlers, log }),
];
const caller = await nats.connect("caller");
const idem = rpcClient(caller, "idem", AuthService, { timeoutMs: 5000 });
const plain = rpcClient(caller, "plain", AuthService, { timeoutMs: 5000 });
t.teardown(async () => {
  for (const s of servers) await s.stop();
  store.stop();
  await pool.end();
  await db.drop();
  await nats.stop();
});

const actor = { id: "op-1", name: "alice", type: "operator", role: "admin" };
const opts = (key: string, hash = "h1", replays?: string[]): CallOptions => ({
  actor,
  idempotency: { key, hash, onReplay: () => void replays?.push(key) },
});
const errOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as OrchError,
  );

t.test("same key and hash: the handler runs once and the reply is replayed", async (t) => {
  const replays: string[] = [];
  const before = runs;
  const a = await idem.getOperator({ id: "x" }, opts("k1", "h1", replays));
  const b = await idem.getOperator({ id: "x" }, opts("k1", "h1", replays));
  t.equal(runs - before, 1);
  t.equal(b.name, a.name);
  t.same(replays, ["k1"], "only the second is a replay");
  const other = await idem.getOperator({ id: "x" }, { ...opts("k1"), actor: { ...actor, id: "op-2" } });
  t.not(other.name, a.name, "another actor's same key is another key");
});

t.test("another hash → idempotency_key_reused; a malformed key → invalid_idempotency_key", async (t) => {
  await idem.getOperator({ id: "x" }, opts("k2", "h1"));
  const e = await errOf(idem.getOperator({ id: "x" }, opts("k2", "h2")));
  t.equal(e?.code, "FAILED_PRECONDITION");
  t.equal(e?.reason, "idempotency_key_reused");
  const bad = await errOf(idem.getOperator({ id: "x" }, opts("bad key")));
  t.equal(bad?.reason, "invalid_idempotency_key");
});

t.test("a bus caller without a hash: the request bytes stand for the request", async (t) => {
  const before = runs;
  const bare = (id: string) => {
    const o = opts("k3");
    return idem.getOperator({ id }, { ...o, idempotency: { key: "k3", hash: "" } });
  };
  await bare("x");
  await bare("x");
  t.equal(runs - before, 1);
  t.equal((await errOf(bare("y")))?.reason, "idempotency_key_reused");
});

t.test("definite errors are replayed; transient ones are not stored", async (t) => {
  const before = runs;
  t.equal((await errOf(idem.getOperator({ id: "missing" }, opts("k4"))))?.reason, "operator_not_found");
  t.equal((await errOf(idem.getOperator({ id: "missing" }, opts("k4"))))?.reason, "operator_not_found");
  t.equal(runs - before, 1, "the 404 was replayed");
  t.equal((await errOf(idem.getOperator({ id: "boom" }, opts("k5"))))?.code, "INTERNAL");
  t.equal((await errOf(idem.getOperator({ id: "boom" }, opts("k5"))))?.code, "INTERNAL");
  t.equal(runs - before, 3, "the INTERNAL ran again");
});

t.test("while the first request runs, a retry gets idempotency_key_in_flight", async (t) => {
  let open!: () => void;
  gate = new Promise((r) => (open = r));
  const first = idem.getOperator({ id: "x" }, opts("k6"));
  await new Promise((r) => setTimeout(r, 200));
  const e = await errOf(idem.getOperator({ id: "x" }, opts("k6")));
  t.equal(e?.reason, "idempotency_key_in_flight");
  open();
  gate = undefined;
  const a = await first;
  t.equal((await idem.getOperator({ id: "x" }, opts("k6"))).name, a.name);
});

t.test("after 24 h a key is new again, and the prune job removes it", async (t) => {
  const a = await idem.getOperator({ id: "x" }, opts("k7"));
  now += IDEMPOTENCY_TTL_MS + 1;
  const b = await idem.getOperator({ id: "x" }, opts("k7", "another-body"));
  t.not(b.name, a.name, "neither replayed nor refused as reused");
  now += IDEMPOTENCY_TTL_MS + 1;
  t.equal(await store.prune(), true);
  const left = await pool.query("SELECT count(*)::int AS n FROM idempotency");
  t.equal(left.rows[0].n, 0);
});

t.test("without a store (a service with no database) the key is ignored", async (t) => {
  const before = runs;
  await plain.getOperator({ id: "x" }, opts("k8"));
  await plain.getOperator({ id: "x" }, opts("k8"));
  t.equal(runs - before, 2);
});
