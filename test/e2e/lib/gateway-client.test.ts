import t from "tap";
import { createServer, type Server } from "node:http";
import { freePort } from "@orch/kit/testing";
import { retryingClient } from "./gateway-client.js";

// The scale test's operator client: a refused connection moves on to the next gateway without
// counting as a retry; a 5xx or a dropped request is retried once, other gateway first; a 4xx
// is final.

/** A fake gateway answering each request with the next status of `plan` (then the last one); "drop" cuts the socket. */
async function gateway(plan: Array<number | "drop">) {
  let n = 0;
  const server: Server = createServer((req, res) => {
    const step = plan[Math.min(n++, plan.length - 1)]!;
    if (step === "drop") return req.socket.destroy();
    res.writeHead(step, { "content-type": "application/json" }).end(JSON.stringify({ status: step }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, hits: () => n };
}
const dead = async () => `http://127.0.0.1:${await freePort()}`;
const ok = (r: { status: number }) => r.status === 200;

t.test("a refusing gateway is skipped without using the retry", async (t) => {
  const [down, up] = [await dead(), await gateway([200])];
  const c = retryingClient([down, up.url], "tok");
  const rec = await c.call("x", "GET", "/", ok);
  t.match(rec, { ok: true, requests: 1 });
  t.same(
    rec.attempts.map((a) => [a.url, a.outcome]),
    [
      [down, "ECONNREFUSED"],
      [up.url, "200"],
    ],
  );
});

t.test("a 5xx is retried once on the other gateway", async (t) => {
  const [g1, g2] = [await gateway([504]), await gateway([200])];
  const rec = await retryingClient([g1.url, g2.url], "tok").call("x", "GET", "/", ok);
  t.match(rec, { ok: true, requests: 2 });
  t.same([g1.hits(), g2.hits()], [1, 1]);
});

t.test("a dropped request is retried once", async (t) => {
  const [g1, g2] = [await gateway(["drop"]), await gateway([200])];
  const rec = await retryingClient([g1.url, g2.url], "tok").call("x", "GET", "/", ok);
  t.match(rec, { ok: true, requests: 2 });
});

t.test("only one retry: two 5xx fail the call", async (t) => {
  const [g1, g2] = [await gateway([503]), await gateway([503, 200])];
  const rec = await retryingClient([g1.url, g2.url], "tok").call("x", "GET", "/", ok);
  t.match(rec, { ok: false, requests: 2 });
  t.same([g1.hits(), g2.hits()], [1, 1]);
});

t.test("with the other gateway down the retry goes to the live one", async (t) => {
  const [down, g2] = [await dead(), await gateway([504, 200])];
  const rec = await retryingClient([down, g2.url], "tok").call("x", "GET", "/", ok);
  t.match(rec, { ok: true, requests: 2 });
  t.equal(g2.hits(), 2);
});

t.test("a 4xx is final", async (t) => {
  const [g1, g2] = [await gateway([404]), await gateway([200])];
  const rec = await retryingClient([g1.url, g2.url], "tok").call("x", "GET", "/", ok);
  t.match(rec, { ok: false, requests: 1 });
  t.equal(g2.hits(), 0);
});

t.test("no gateway accepts: the call fails without a request", async (t) => {
  const rec = await retryingClient([await dead(), await dead()], "tok").call("x", "GET", "/", ok);
  t.match(rec, { ok: false, requests: 0 });
});
