import { createServer, type AddressInfo, type Server } from "node:net";
import t, { type Test } from "tap";
import { freePort } from "@orch/kit/testing";
import { bodyLimitOf, closedByServer, GATEWAY_BODY_LIMIT, refusedByClose } from "./lib/refusal.js";
import type { FuzzRequest, Route } from "./lib/requests.js";
import { WEBHOOK_BODY_LIMIT } from "../../services/gateway/src/routes/sources-webhook.js";

// When a connection the server closed is the refusal of an over-limit body (the oracle accepts it)
// and when it is a request left without an answer (a failure), on the errors fetch really throws.

/** A server that closes every connection at its first bytes, as a gateway refusing a body does. */
async function closingServer(t: Test): Promise<string> {
  const server: Server = createServer((c) => c.once("data", () => c.destroy()));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const post = (url: string, body: string) =>
  fetch(`${url}/api/v1/secrets`, { method: "POST", body, headers: { "content-type": "application/json" } }).then(
    async (res) => res.text(),
  );
const errorOf = async (p: Promise<unknown>): Promise<unknown> => {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the request to fail");
};
const request = (body: string): FuzzRequest => ({
  route: "POST /api/v1/secrets",
  method: "POST",
  url: "/api/v1/secrets",
  identity: "admin",
  headers: {},
  body,
});
const jsonRoute: Route = {
  method: "POST",
  path: "/api/v1/secrets",
  op: { requestBody: { content: { "application/json": {} } }, responses: {} },
};
const rawRoute: Route = {
  method: "POST",
  path: "/api/v1/sources/{name}/webhook",
  op: { requestBody: { content: { "*/*": {} } }, responses: {} },
};

t.test("a close while an over-limit body is sent is a refusal", async (t) => {
  const url = await closingServer(t);
  const body = "x".repeat(GATEWAY_BODY_LIMIT + 1);
  const err = await errorOf(post(url, body));
  t.ok(closedByServer(err), `fetch's error names the close: ${String(err)} ${String((err as Error).cause)}`);
  t.ok(refusedByClose(request(body), jsonRoute, err), "over the limit: the refusal it is");
  t.ok(refusedByClose(request(body), undefined, err), "also where no documented route serves the path");
});

t.test("a close after a body within the limit is a request without an answer", async (t) => {
  const url = await closingServer(t);
  const body = "x".repeat(GATEWAY_BODY_LIMIT);
  const err = await errorOf(post(url, body));
  t.ok(closedByServer(err), "closed, as before");
  t.notOk(refusedByClose(request(body), jsonRoute, err), "at the limit exactly: accepted, so the close is a failure");
  t.notOk(refusedByClose(request("{}"), jsonRoute, err), "a small body");
  t.notOk(refusedByClose({ ...request(""), body: undefined }, jsonRoute, err), "no body");
});

t.test("a gateway that is not there is no refusal, whatever the body", async (t) => {
  const port = await freePort();
  const body = "x".repeat(GATEWAY_BODY_LIMIT + 1);
  const err = await errorOf(post(`http://127.0.0.1:${port}`, body));
  t.notOk(closedByServer(err), `connection refused: ${String((err as Error).cause)}`);
  t.notOk(refusedByClose(request(body), jsonRoute, err), "not a refusal");
  t.notOk(closedByServer(new Error("no answer in 30 s")), "a timeout");
});

t.test("every way fetch reports the close is recognised", async (t) => {
  const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
  const shapes: Array<[string, unknown]> = [
    ["EPIPE while sending", new TypeError("fetch failed", { cause: coded("write EPIPE", "EPIPE") })],
    ["a reset", new TypeError("fetch failed", { cause: coded("read ECONNRESET", "ECONNRESET") })],
    [
      "closed before the answer",
      new TypeError("fetch failed", { cause: coded("other side closed", "UND_ERR_SOCKET") }),
    ],
    [
      "closed while the answer is read",
      new TypeError("terminated", { cause: coded("other side closed", "UND_ERR_SOCKET") }),
    ],
    ["deeper in the chain", new Error("x", { cause: new Error("y", { cause: coded("write EPIPE", "EPIPE") }) })],
    [
      "among several",
      new AggregateError([coded("connect ECONNREFUSED", "ECONNREFUSED"), coded("write EPIPE", "EPIPE")]),
    ],
  ];
  for (const [what, err] of shapes) t.ok(closedByServer(err), what);
  const cyclic = new Error("loop");
  (cyclic as { cause?: unknown }).cause = cyclic;
  t.notOk(closedByServer(cyclic), "a cause chain that loops ends");
  t.notOk(closedByServer("EPIPE"), "only errors are read");
});

t.test("the limit is the route's: a raw-body route's own, else the gateway's", async (t) => {
  t.ok(Number.isSafeInteger(GATEWAY_BODY_LIMIT) && GATEWAY_BODY_LIMIT > 0, `${GATEWAY_BODY_LIMIT} bytes`);
  t.equal(bodyLimitOf(jsonRoute, "POST"), GATEWAY_BODY_LIMIT);
  t.equal(bodyLimitOf(undefined, "POST"), GATEWAY_BODY_LIMIT, "no route: the gateway's");
  t.equal(bodyLimitOf(rawRoute, "POST"), WEBHOOK_BODY_LIMIT);
  t.equal(bodyLimitOf(rawRoute, "PUT"), GATEWAY_BODY_LIMIT, "another method is not served by the raw route");
});
