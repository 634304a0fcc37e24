import type { IncomingMessage, ServerResponse } from "node:http";
import t from "tap";
import { rawRequest, WRITE_TRIES } from "../src/http.js";
import { cli } from "./helpers/cli.js";
import { loggedIn, world } from "./helpers/setup.js";

// orchctl marks every write with an Idempotency-Key and retries an unknown outcome (503/504, a
// dropped connection, a key still in flight) with the same key, so a lost reply never makes a
// second change (docs/http-api.md).

const keyOf = (req: IncomingMessage) => req.headers["idempotency-key"] as string | undefined;
const problem = (res: ServerResponse, status: number, code: string) => {
  res.writeHead(status, { "content-type": "application/problem+json" });
  res.end(JSON.stringify({ type: "about:blank", title: code, status, detail: code, code }));
};

t.test("orchctl operators add: a 503 is retried once with the same Idempotency-Key", async (t) => {
  const w = await loggedIn(t);
  const keys: Array<string | undefined> = [];
  w.server.overrides.set("POST /api/v1/operators", (req, res) => {
    keys.push(keyOf(req));
    if (keys.length === 1) return problem(res, 503, "service_unavailable");
    res.writeHead(201, { "content-type": "application/json" });
    const op = { id: "op-1", name: "bob", role: "operator", public_key: "ab".repeat(32), active: true };
    res.end(JSON.stringify({ ...op, created_at: "2025-01-01T00:00:00Z", created_by: null }));
  });
  const r = await cli(["operators", "add", "bob", "--public-key", "ab".repeat(32), "--json"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(JSON.parse(r.stdout).name, "bob");
  t.equal(keys.length, 2, "one retry");
  t.match(keys[0], /^[0-9a-f-]{36}$/, "a UUID key");
  t.equal(keys[1], keys[0], "the retry carries the same key");

  // A second command is a new intent: a new key.
  keys.length = 0;
  await cli(["operators", "add", "bob", "--public-key", "ab".repeat(32), "--json"], w.env);
  t.equal(keys.length, 2);
  t.not(keys[0], undefined);
});

t.test("reads carry no key and are not retried; writes give up after a bounded number of tries", async (t) => {
  const w = await world(t);
  const seen: Array<{ method: string; key: string | undefined }> = [];
  const always503 = (req: IncomingMessage, res: ServerResponse) => {
    seen.push({ method: req.method ?? "", key: keyOf(req) });
    problem(res, 503, "service_unavailable");
  };
  w.server.overrides.set("GET /api/v1/things", always503);
  w.server.overrides.set("DELETE /api/v1/things/x", always503);
  const noDelay = () => 1;

  const server = w.server.url;
  await t.rejects(rawRequest({ server, method: "GET", path: "/things", retryDelayMs: noDelay }), {
    name: "ProblemError",
    status: 503,
  });
  t.same(seen, [{ method: "GET", key: undefined }]);

  seen.length = 0;
  await t.rejects(rawRequest({ server, method: "DELETE", path: "/things/x", retryDelayMs: noDelay }), {
    name: "ProblemError",
    status: 503,
  });
  t.equal(seen.length, WRITE_TRIES);
  t.equal(new Set(seen.map((s) => s.key)).size, 1, "one key for every try");
  t.type(seen[0]!.key, "string");
});

t.test("idempotency_key_in_flight and 504 are retried; other 409s are not", async (t) => {
  const w = await world(t);
  const answers = [
    (res: ServerResponse) => problem(res, 409, "idempotency_key_in_flight"),
    (res: ServerResponse) => problem(res, 504, "deadline_exceeded"),
    (res: ServerResponse) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    },
  ];
  let n = 0;
  w.server.overrides.set("PUT /api/v1/things/a", (_req, res) => answers[n++]!(res));
  const server = w.server.url;
  const retryDelayMs = () => 1;
  t.same(await rawRequest({ server, method: "PUT", path: "/things/a", body: { v: 1 }, retryDelayMs }), { ok: true });
  t.equal(n, 3);

  let m = 0;
  w.server.overrides.set("PUT /api/v1/things/b", (_req, res) => {
    m++;
    problem(res, 409, "idempotency_key_reused");
  });
  await t.rejects(rawRequest({ server, method: "PUT", path: "/things/b", body: {}, retryDelayMs }), {
    name: "ProblemError",
    status: 409,
  });
  t.equal(m, 1, "a definite answer is not retried");
});

t.test("a dropped connection is retried with the same key", async (t) => {
  const w = await world(t);
  const keys: Array<string | undefined> = [];
  w.server.overrides.set("POST /api/v1/things", (req, res) => {
    keys.push(keyOf(req));
    if (keys.length === 1) {
      req.socket.destroy();
      return;
    }
    res.writeHead(201, { "content-type": "application/json" });
    res.end('{"id":"t1"}');
  });
  const server = w.server.url;
  const res = await rawRequest({ server, method: "POST", path: "/things", body: { a: 1 }, retryDelayMs: () => 1 });
  t.same(res, { id: "t1" });
  t.equal(keys.length, 2);
  t.equal(keys[1], keys[0]);
});
