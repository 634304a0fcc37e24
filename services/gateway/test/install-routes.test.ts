import { mkdirSync, readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import t, { type Test } from "tap";
import { AgentsService } from "@orch/contracts";
import { rpcClient, verifyManifest } from "@orch/kit";
import { createTestDatabase, startNats } from "@orch/kit/testing";
import { startAgentsService } from "../../agents/test/harness.js";
import { call } from "./harness.js";
import { releaseFixture, startInstallGateway } from "./install-fixture.js";

const nats = await startNats();
const db = await createTestDatabase();
const agents = await startAgentsService(nats, db);
const fx = releaseFixture();
const m1 = fx.addRelease("0.1.0");
fx.addRelease("0.10.0");
fx.addRelease("0.9.0");
const gw = await startInstallGateway(nats, { dir: fx.dir, signing_key_file: fx.keyFile });
t.teardown(async () => {
  await gw.stop();
  await agents.stop();
  await db.drop();
  await nats.stop();
  fx.cleanup();
});

function rawGet(base: string, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { path }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end();
  });
}

const isProblem = (t: Test, r: Awaited<ReturnType<typeof call>>, status: number, code: string, what: string) => {
  t.equal(r.status, status, `${what}: status`);
  t.match(r.type, /^application\/problem\+json/, `${what}: problem+json`);
  t.equal(r.body?.code, code, `${what}: code`);
};

t.test("agent.sh embeds the base URL, link address, fingerprint, public key and latest version", async (t) => {
  const nc = await nats.connect("install-test");
  t.teardown(() => nc.close());
  const link = await rpcClient(nc, "agents", AgentsService, { timeoutMs: 5000 }).getLinkInfo({});
  t.match(link.fingerprint, /^sha256:[0-9a-f]{64}$/);

  const r = await call(gw.url, "GET", "/install/agent.sh");
  t.equal(r.status, 200);
  t.match(r.type, /^text\/x-shellscript/);
  t.match(r.text, /^#!\/bin\/sh\n/);
  t.notMatch(r.text, /@@[A-Z_]+@@/, "every placeholder filled");
  t.ok(r.text.includes(`BASE_URL='${gw.url}'`), "base URL is the address the request arrived on");
  t.ok(r.text.includes(`SERVER='${agents.server}'`), "link address: base URL host + link port");
  t.ok(r.text.includes(`FINGERPRINT='${link.fingerprint}'`));
  t.ok(r.text.includes("INSECURE='false'"));
  t.ok(r.text.includes("LATEST_VERSION='0.10.0'"), "latest by version order, not by name");
  t.ok(r.text.includes(`RELEASE_PUB='${fx.publicKeyPem.trim()}'`), "public key embedded");

  const pub = await call(gw.url, "GET", "/install/release.pub");
  t.equal(pub.status, 200);
  t.equal(pub.text, fx.publicKeyPem);
});

t.test("manifest, signature and packages are served as on disk", async (t) => {
  const res = await fetch(`${gw.url}/install/releases/0.1.0/manifest.json`);
  t.equal(res.status, 200);
  t.match(res.headers.get("content-type"), /^application\/json/);
  const bytes = Buffer.from(await res.arrayBuffer());
  t.same(bytes, readFileSync(join(fx.dir, "0.1.0/manifest.json")), "byte for byte");

  const sig = await call(gw.url, "GET", "/install/releases/0.1.0/manifest.json.sig");
  t.equal(sig.status, 200);
  t.ok(verifyManifest(bytes, sig.text, fx.publicKeyPem), "signature verifies with the release key");
  const tampered = Buffer.from(bytes);
  tampered[5] = (tampered[5] ?? 0) ^ 1;
  t.notOk(verifyManifest(tampered, sig.text, fx.publicKeyPem), "and only for these bytes");
  const sig2 = await call(gw.url, "GET", "/install/releases/0.1.0/manifest.json.sig");
  t.equal(sig2.text, sig.text, "stable (Ed25519 is deterministic)");

  for (const p of m1.packages) {
    const f = await fetch(`${gw.url}/install/releases/0.1.0/${p.file}`);
    t.equal(f.status, 200, p.file);
    t.equal(f.headers.get("content-length"), String(p.size), `${p.file}: content-length`);
    const body = Buffer.from(await f.arrayBuffer());
    t.same(body, readFileSync(join(fx.dir, "0.1.0", p.file)), `${p.file}: bytes`);
  }
});

t.test("unknown versions, unlisted files and traversal attempts", async (t) => {
  const get = (p: string) => call(gw.url, "GET", p);
  isProblem(t, await get("/install/releases/9.9.9/manifest.json"), 404, "agent_version_not_found", "unknown version");
  isProblem(t, await get("/install/releases/9.9.9/manifest.json.sig"), 404, "agent_version_not_found", "unknown sig");
  isProblem(t, await get("/install/releases/9.9.9/orch-agent_9.9.9_amd64.deb"), 404, "agent_version_not_found", "file");
  isProblem(t, await get("/install/releases/latest/manifest.json"), 400, "invalid_version", "not a version");
  isProblem(t, await get("/install/releases/0.1.0/orch-agent_0.1.0_s390x.deb"), 404, "route_not_found", "unlisted");
  isProblem(t, await get("/install/releases/0.1.0/..%2F..%2Frelease.key"), 404, "route_not_found", "encoded ../");
  isProblem(t, await get("/install/releases/0.1.0/%2Fetc%2Fpasswd"), 404, "route_not_found", "absolute path");
  isProblem(t, await get("/install/releases/..%2F..%2Frelease.key/x"), 400, "invalid_version", "traversal in version");
  isProblem(t, await get("/install/releases/..%2F0.1.0/manifest.json"), 400, "invalid_version", "../version");
  // fetch would resolve dot segments itself; node:http sends the path as written.
  for (const path of ["/install/releases/0.1.0/../../release.key", "/install/releases/../manifest.json"]) {
    const res = await rawGet(gw.url, path);
    // Not a route: a 404, or the console's page when the web console is built (SPA fallback).
    if (res.status === 200) t.match(res.text, /<html/i, `${path}: only the console page`);
    t.notMatch(res.text, /PRIVATE KEY|"packages"/, `${path}: nothing from the releases directory`);
  }
});

t.test("the routes are public and listed in the OpenAPI document", async (t) => {
  const doc = (await call(gw.url, "GET", "/api/v1/openapi.json")).body;
  for (const p of [
    "/install/agent.sh",
    "/install/release.pub",
    "/install/releases/{version}/manifest.json",
    "/install/releases/{version}/manifest.json.sig",
    "/install/releases/{version}/{file}",
  ])
    t.equal(doc.paths[p]?.get?.["x-auth"], "public", p);
});

t.test("no releases: 404 agent_packages_unavailable; no key: 503 release_signing_unavailable", async (t) => {
  const empty = join(fx.dir, "..", "empty");
  mkdirSync(empty, { recursive: true });
  const none = await startInstallGateway(nats, { dir: empty, signing_key_file: fx.keyFile });
  t.teardown(() => none.stop());
  isProblem(t, await call(none.url, "GET", "/install/agent.sh"), 404, "agent_packages_unavailable", "agent.sh");
  isProblem(
    t,
    await call(none.url, "GET", "/install/releases/0.1.0/manifest.json"),
    404,
    "agent_packages_unavailable",
    "manifest",
  );
  t.equal((await call(none.url, "GET", "/install/release.pub")).status, 200, "the key is still served");

  for (const key of ["", join(fx.dir, "..", "missing.key"), join(fx.dir, "0.1.0/manifest.json")]) {
    const nokey = await startInstallGateway(nats, { dir: fx.dir, signing_key_file: key });
    t.teardown(() => nokey.stop());
    const what = key ? `key file ${key.split("/").pop()}` : "no key configured";
    isProblem(
      t,
      await call(nokey.url, "GET", "/install/agent.sh"),
      503,
      "release_signing_unavailable",
      `${what}: agent.sh`,
    );
    isProblem(
      t,
      await call(nokey.url, "GET", "/install/release.pub"),
      503,
      "release_signing_unavailable",
      `${what}: pub`,
    );
    isProblem(
      t,
      await call(nokey.url, "GET", "/install/releases/0.1.0/manifest.json.sig"),
      503,
      "release_signing_unavailable",
      `${what}: sig`,
    );
    t.equal((await call(nokey.url, "GET", "/install/releases/0.1.0/manifest.json")).status, 200, `${what}: manifest`);
  }
});

t.test("agents service down: agent.sh is 503 service_unavailable", async (t) => {
  const other = await startNats();
  const lone = await startInstallGateway(other, { dir: fx.dir, signing_key_file: fx.keyFile });
  t.teardown(async () => {
    await lone.stop();
    await other.stop();
  });
  isProblem(t, await call(lone.url, "GET", "/install/agent.sh"), 503, "service_unavailable", "no agents service");
  t.equal((await call(lone.url, "GET", "/install/releases/0.1.0/manifest.json")).status, 200, "releases still served");
});
