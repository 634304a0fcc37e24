import t, { type Test } from "tap";
import { createTestDatabase, ed25519, eventually, startNats } from "@orch/kit/testing";
import { overallStatus } from "../src/routes/status.js";
import { call, startAuth, startGateway } from "./harness.js";

// GET /api/v1/status (docs/http-api.md): 200 while any service answers, 503 — same body — when none does,
// shown with the NATS server really killed and brought back.
const nats = await startNats();
const db = await createTestDatabase();
const auth = await startAuth(nats, db, ed25519());
const gw = await startGateway(nats, undefined, { services: ["auth", "terminal"] });
t.teardown(async () => {
  await gw.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const shape = (t: Test, body: any) => {
  t.equal(body.protocol_version, "1");
  t.equal(body.api_version, "0.0.9");
  t.same(Object.keys(body.services).sort(), ["auth", "terminal"]);
};

t.test("a partial outage is 200 degraded with per-service status", async (t) => {
  const r = await call(gw.url, "GET", "/api/v1/status");
  t.equal(r.status, 200);
  t.equal(r.body.status, "degraded");
  t.same(r.body.services, { auth: "ok", terminal: "unavailable" });
  shape(t, r.body);
});

t.test("with NATS stopped, /status is 503 unavailable with the same body shape", async (t) => {
  await nats.kill();
  const r = await call(gw.url, "GET", "/api/v1/status");
  t.equal(r.status, 503);
  t.match(r.type, /^application\/json/);
  t.equal(r.body.status, "unavailable");
  t.same(r.body.services, { auth: "unavailable", terminal: "unavailable" });
  shape(t, r.body);
  await nats.restart();
  // The clients reconnect by themselves; the status follows.
  const back = await eventually(
    async () => {
      const s = await call(gw.url, "GET", "/api/v1/status");
      return s.status === 200 ? s : undefined;
    },
    20_000,
    200,
  );
  t.equal(back.body.services.auth, "ok");
});

t.test("overall status", async (t) => {
  t.equal(overallStatus([true, true]), "ok");
  t.equal(overallStatus([true, false]), "degraded");
  t.equal(overallStatus([false, false]), "unavailable");
  t.equal(overallStatus([]), "ok", "nothing configured to ask: nothing down");
});
