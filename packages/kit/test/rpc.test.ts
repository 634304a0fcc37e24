import t from "tap";
import { create } from "@bufbuild/protobuf";
import { AuthService, OperatorSchema } from "@orch/contracts";
import { OrchError, serveRpc, rpcClient, pingService, notFound, type Handlers } from "@orch/kit";
import { startNats, silentLogger } from "@orch/kit/testing";

const nats = await startNats();
t.teardown(() => nats.stop());
const nc = await nats.connect();
const log = silentLogger();

const seen: Array<{ actor: string; requestId: string }> = [];
const handlers = {
  async getOperator(req, ctx) {
    seen.push({ actor: ctx.actor.id, requestId: ctx.requestId });
    if (req.id === "missing") throw notFound("operator_not_found", "no such operator", { id: req.id });
    if (req.id === "boom") throw new Error("database password is hunter2");
    if (req.id === "slow") await new Promise((r) => setTimeout(r, 500));
    return create(OperatorSchema, { id: req.id, name: "alice", role: "admin", createdAt: 1700000000000 });
  },
} as Partial<Handlers<typeof AuthService>> as Handlers<typeof AuthService>;
// Only getOperator is exercised; the others answer INTERNAL if called.
for (const m of AuthService.methods)
  (handlers as Record<string, unknown>)[m.localName] ??= async () => {
    throw new Error("unused");
  };

const server = serveRpc({ nc, name: "auth", service: AuthService, handlers, log });
t.teardown(() => server.stop());
const client = rpcClient(nc, "auth", AuthService, { timeoutMs: 2000 });

t.test("typed request/reply round trip carries actor and request id", async (t) => {
  const op = await client.getOperator(
    { id: "01ABC" },
    { actor: { id: "op1", name: "bob", type: "operator", role: "admin" }, requestId: "req-1" },
  );
  t.equal(op.name, "alice");
  t.equal(op.createdAt, 1700000000000, "int64 arrives as a JS number");
  t.same(seen.at(-1), { actor: "op1", requestId: "req-1" });
});

t.test("a typed error crosses the bus with its code, reason and details", async (t) => {
  const err = await client.getOperator({ id: "missing" }).catch((e: unknown) => e);
  t.ok(err instanceof OrchError);
  const e = err as OrchError;
  t.equal(e.code, "NOT_FOUND");
  t.equal(e.reason, "operator_not_found");
  t.equal(e.httpStatus, 404);
  t.same(e.details, { id: "missing" });
});

t.test("an unexpected error becomes INTERNAL without leaking its message", async (t) => {
  const e = (await client.getOperator({ id: "boom" }).catch((x: unknown) => x)) as OrchError;
  t.equal(e.code, "INTERNAL");
  t.notMatch(e.message, /hunter2/);
});

t.test("every request has a timeout", async (t) => {
  const e = (await client.getOperator({ id: "slow" }, { timeoutMs: 100 }).catch((x: unknown) => x)) as OrchError;
  t.equal(e.code, "DEADLINE_EXCEEDED");
});

t.test("no responders maps to UNAVAILABLE; ping reports liveness", async (t) => {
  const other = rpcClient(nc, "nobody", AuthService, { timeoutMs: 1000 });
  const e = (await other.getOperator({ id: "x" }).catch((x: unknown) => x)) as OrchError;
  t.equal(e.code, "UNAVAILABLE");
  t.equal(await pingService(nc, "auth"), true);
  t.equal(await pingService(nc, "nobody", 300), false);
});
