import { readFileSync } from "node:fs";
import t from "tap";
import { startNats } from "@orch/kit/testing";
import { call, startGateway } from "./harness.js";

// GET /api/v1/asyncapi.json serves, without a token, exactly the committed document integrators
// may also read from the repository (packages/contracts/asyncapi.json).
const nats = await startNats();
const gw = await startGateway(nats);
t.teardown(async () => {
  await gw.stop();
  await nats.stop();
});

t.test("GET /api/v1/asyncapi.json returns the committed AsyncAPI document, no token needed", async (t) => {
  const committed = JSON.parse(
    readFileSync(new URL("../../../packages/contracts/asyncapi.json", import.meta.url), "utf8"),
  );
  const res = await call(gw.url, "GET", "/api/v1/asyncapi.json");
  t.equal(res.status, 200);
  t.match(res.type, /^application\/json/);
  t.same(res.body, committed);
  t.equal(res.body.asyncapi, "3.0.0");
});

t.test("it is listed in the OpenAPI document as a public route", async (t) => {
  const doc = (await call(gw.url, "GET", "/api/v1/openapi.json")).body;
  t.match(doc.paths["/api/v1/asyncapi.json"]?.get, { "x-auth": "public", security: [] });
});
