import t from "tap";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentControlService, PingRequestSchema, PingResponseSchema, RequestSchema } from "@orch/contracts";
import { createDispatcher } from "../src/link/dispatch.js";
import { createAgentLogger } from "../src/log.js";
import { AgentError } from "../src/runtime.js";

const logged: string[] = [];
const log = createAgentLogger("debug", (l) => void logged.push(l));
let behaviour: "echo" | "agent-error" | "crash" | "slow" = "echo";

const d = createDispatcher(log);
d.serve(AgentControlService, {
  async ping(req) {
    if (behaviour === "agent-error") throw new AgentError("NOT_FOUND", "not_found", "nothing here");
    if (behaviour === "crash") throw new Error("secret internals /etc/shadow");
    if (behaviour === "slow") await new Promise((r) => setTimeout(r, 10_000).unref());
    return { payload: req.payload, nodeId: "n1", agentTime: 1 };
  },
});

const req = (method: string, payload: Uint8Array, deadline = Date.now() + 5000) =>
  create(RequestSchema, { id: 7n, method, payload, deadline });
const ping = (p: string) => toBinary(PingRequestSchema, create(PingRequestSchema, { payload: p }));

t.test("unit: a request is decoded, handled and encoded with the method's schemas", async (t) => {
  behaviour = "echo";
  const res = await d.handle(req("Ping", ping("abc")), { approved: true });
  t.equal(res.id, 7n);
  t.notOk(res.error);
  t.match(fromBinary(PingResponseSchema, res.payload as Uint8Array), { payload: "abc", nodeId: "n1" });
  t.same(d.methods(), ["Ping"]);
});

t.test("unit: refusals carry a code and a stable reason", async (t) => {
  behaviour = "echo";
  t.match((await d.handle(req("Nope", ping("x")), { approved: true })).error, {
    code: "INTERNAL",
    reason: "unknown_method",
  });
  t.match((await d.handle(req("Ping", ping("x")), { approved: false })).error, {
    code: "FAILED_PRECONDITION",
    reason: "agent_not_approved",
  });
  t.match((await d.handle(req("Ping", new Uint8Array([0xff, 0xff, 0xff, 0xff])), { approved: true })).error, {
    code: "INVALID_ARGUMENT",
    reason: "invalid_payload",
  });
  t.match((await d.handle(req("Ping", ping("x"), Date.now() - 1), { approved: true })).error, {
    code: "DEADLINE_EXCEEDED",
  });

  behaviour = "agent-error";
  t.match((await d.handle(req("Ping", ping("x")), { approved: true })).error, {
    code: "NOT_FOUND",
    reason: "not_found",
    message: "nothing here",
  });

  behaviour = "crash";
  const crash = (await d.handle(req("Ping", ping("x")), { approved: true })).error!;
  t.match(crash, { code: "INTERNAL", reason: "internal" });
  t.notMatch(crash.message, /shadow/, "the cause is logged, not sent");
  t.ok(logged.some((l) => l.includes("agent handler failed")));
});

t.test("unit: a handler still running at its deadline is answered DEADLINE_EXCEEDED", async (t) => {
  behaviour = "slow";
  const res = await d.handle(req("Ping", ping("x"), Date.now() + 100), { approved: true });
  t.match(res.error, { code: "DEADLINE_EXCEEDED", reason: "deadline_exceeded" });
});

t.test("unit: a method name served twice is a startup error", async (t) => {
  t.throws(() => d.serve(AgentControlService, { ping: async () => ({}) }), /served twice/);
});
