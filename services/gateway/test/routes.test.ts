import t from "tap";
import SwaggerParser from "@apidevtools/swagger-parser";
import { createTestDatabase, ed25519, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "./harness.js";

// Default-deny, proven over the whole route table: every admin route refuses an operator, every
// non-public route refuses an anonymous caller — including routes added later.
const nats = await startNats();
const db = await createTestDatabase();
const admin = ed25519();
const auth = await startAuth(nats, db, admin);
const gw = await startGateway(nats);
t.teardown(async () => {
  await gw.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "x1");

t.test("every route declares an auth level", async (t) => {
  for (const r of gw.routes) t.ok(["public", "operator", "admin"].includes(r.auth), `${r.method} ${r.path}: ${r.auth}`);
});

t.test("every non-public route answers 401 without a token", async (t) => {
  for (const r of gw.routes.filter((r) => r.auth !== "public")) {
    const res = await call(
      gw.url,
      r.method,
      concrete(r.path),
      r.method === "GET" || r.method === "DELETE" ? {} : { body: {} },
    );
    t.equal(res.status, 401, `${r.method} ${r.path}`);
    t.match(res.type, /problem\+json/);
  }
});

t.test("every admin route answers 403 to an operator, whatever the body", async (t) => {
  const adminToken = await login(gw.url, admin);
  const opKey = ed25519();
  t.equal(
    (
      await call(gw.url, "POST", "/api/v1/operators", {
        token: adminToken,
        body: { name: "plain", public_key: opKey.publicKeyHex },
      })
    ).status,
    201,
  );
  const token = await login(gw.url, opKey);
  const adminRoutes = gw.routes.filter((r) => r.auth === "admin");
  t.ok(adminRoutes.length >= 2);
  for (const r of adminRoutes) {
    const res = await call(
      gw.url,
      r.method,
      concrete(r.path),
      r.method === "GET" || r.method === "DELETE" ? { token } : { token, raw: "{not json" },
    );
    t.equal(res.status, 403, `${r.method} ${r.path}`);
    t.equal(res.body.code, "admin_required");
  }
});

t.test("the OpenAPI document is valid OpenAPI 3.1 and lists every route", async (t) => {
  const res = await call(gw.url, "GET", "/api/v1/openapi.json");
  t.equal(res.status, 200);
  t.equal(res.body.openapi, "3.1.0");
  t.equal(res.body.info.version, "0.0.9");
  await t.resolves(SwaggerParser.validate(structuredClone(res.body)));
  for (const r of gw.routes) t.ok(res.body.paths[r.path]?.[r.method.toLowerCase()], `${r.method} ${r.path} documented`);
});

t.test("oversized bodies are 413, wrong content type 415", async (t) => {
  const big = await call(gw.url, "POST", "/api/v1/auth/challenge", {
    raw: JSON.stringify({ public_key: "a".repeat(2_000_000) }),
  });
  t.equal(big.status, 413);
  t.equal(big.body.code, "body_too_large");
  const txt = await call(gw.url, "POST", "/api/v1/auth/challenge", {
    raw: "hello",
    headers: { "content-type": "text/plain" },
  });
  t.equal(txt.status, 415);
});

t.test("login endpoints are rate limited per client", async (t) => {
  const limited = await startGateway(nats, undefined, { auth_rate_limit_per_minute: 3 });
  t.teardown(() => limited.stop());
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++)
    statuses.push(
      (await call(limited.url, "POST", "/api/v1/auth/challenge", { body: { public_key: admin.publicKeyHex } })).status,
    );
  t.same(statuses, [200, 200, 200, 429, 429]);
});
