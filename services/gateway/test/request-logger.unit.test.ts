import t from "tap";
import type { FastifyBaseLogger } from "fastify";
import { memoryLogger } from "@orch/kit/testing";
import { requestLogger } from "../src/request-logger.js";

function capture(level: string) {
  const m = memoryLogger("gw", level);
  const log = m.log as unknown as FastifyBaseLogger;
  let children = 0;
  // Children inherit this method (pino children are Object.create of their parent): count them all.
  const child = log.child;
  log.child = function (this: FastifyBaseLogger, b, o) {
    children++;
    return child.call(this, b, o);
  };
  const lines = () => m.lines.flatMap((l) => l.split("\n").filter(Boolean)).map((l) => JSON.parse(l));
  return { log, lines, children: () => children };
}

t.test("a line written carries the request id and the parent's bindings", async (t) => {
  const c = capture("info");
  const req = requestLogger(c.log, { reqId: "r-1" }, {});
  req.error({ err: new Error("boom"), token: "secret" }, "internal error");
  await new Promise((r) => setImmediate(r));
  t.equal(c.lines().length, 1);
  t.match(c.lines()[0], { reqId: "r-1", service: "gw", msg: "internal error", level: 50 });
  t.equal(c.lines()[0]!.token, "[redacted]", "the parent's redaction applies");
  req.info("second");
  await new Promise((r) => setImmediate(r));
  t.match(c.lines()[1], { reqId: "r-1", msg: "second" });
  t.equal(c.children(), 1, "one child per request, made once");
});

t.test("nothing is built for a request that writes nothing at an enabled level", async (t) => {
  const c = capture("warn");
  const req = requestLogger(c.log, { reqId: "r-2" }, {});
  req.info("dropped");
  req.debug("dropped");
  await new Promise((r) => setImmediate(r));
  t.equal(c.lines().length, 0);
  t.equal(c.children(), 0);
  t.equal(req.level, "warn");
});

t.test("a route's own level and nested children work as pino's", async (t) => {
  const c = capture("warn");
  const req = requestLogger(c.log, { reqId: "r-3" }, { level: "debug" });
  req.debug("kept");
  req.child({ sub: 1 }).warn("nested");
  await new Promise((r) => setImmediate(r));
  t.match(c.lines(), [
    { reqId: "r-3", msg: "kept" },
    { reqId: "r-3", sub: 1, msg: "nested" },
  ]);
  t.equal(req.level, "debug");
});
