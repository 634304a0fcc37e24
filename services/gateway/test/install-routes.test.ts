import { execFile } from "node:child_process";
import { createPrivateKey, generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { AgentsService } from "@orch/contracts";
import { rpcClient, signManifest, verifyManifest } from "@orch/kit";
import { gatewayConfigSchema } from "../src/config.js";
import { createTestDatabase, eventually, memoryLogger, startNats } from "@orch/kit/testing";
import { startAgentsService } from "../../agents/test/harness.js";
import { NO_PACKAGES_DETAIL } from "../src/routes/install-releases.js";
import { call } from "./harness.js";
import { releaseFixture, startInstallGateway } from "./install-fixture.js";

const nats = await startNats();
const db = await createTestDatabase();
const agents = await startAgentsService(nats, db);
const fx = releaseFixture();
const m1 = fx.addRelease("0.1.0");
fx.addRelease("0.10.0");
fx.addRelease("0.9.0");
const gw = await startInstallGateway(nats, { dir: fx.dir, public_key_file: fx.pubFile });
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

/** Runs a shell command line; the exit code and both streams, never a throw. */
function sh(shell: string, args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(shell, args, { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

const scratch = mkdtempSync(join(tmpdir(), "orch-install-routes-"));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * /install/agent.sh when the server cannot install: 200 text/x-shellscript (so `curl -f` hands it
 * to sh), shellcheck-clean, and run by sh — also as the documented `curl -fsSL … | sh` line — it
 * prints the reason on stderr and exits 1 whatever the arguments.
 */
async function isFailingScript(t: Test, base: string, code: string, reason: string | RegExp, what: string) {
  const r = await call(base, "GET", "/install/agent.sh");
  t.equal(r.status, 200, `${what}: 200, so curl -f passes the script on`);
  t.match(r.type, /^text\/x-shellscript/, `${what}: a shell script`);
  t.match(r.text, /^#!\/bin\/sh\n/, `${what}: starts as a script`);
  t.match(r.text, /\nexit 1\n$/, `${what}: ends with exit 1`);
  t.ok(r.text.includes(code), `${what}: names ${code}`);
  const file = join(scratch, `${code}.sh`);
  writeFileSync(file, r.text);
  const lint = await sh("shellcheck", ["-s", "sh", file]);
  t.equal(lint.stdout, "", `${what}: shellcheck -s sh is clean`);
  const run = await sh("sh", [file, "--token", `ojt_${"0".repeat(26)}.${"A".repeat(43)}`]);
  t.equal(run.code, 1, `${what}: sh exits 1`);
  t.equal(run.stdout, "", `${what}: nothing on stdout`);
  t.match(run.stderr, reason, `${what}: the reason on stderr`);
  t.match(run.stderr, `(${code})`, `${what}: and its code`);
  const piped = await sh("bash", ["-o", "pipefail", "-c", 'curl -fsSL "$URL/install/agent.sh" | sh -s -- --no-start'], {
    URL: base,
  });
  t.equal(piped.code, 1, `${what}: curl -fsSL … | sh fails`);
  t.match(piped.stderr, reason, `${what}: and says why`);
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
    "/api/v1/agent-packages",
    "/install/release.pub",
    "/install/releases/{version}/manifest.json",
    "/install/releases/{version}/manifest.json.sig",
    "/install/releases/{version}/{file}",
  ])
    t.equal(doc.paths[p]?.get?.["x-auth"], "public", p);
});

t.test("the release listing: versions newest first and the latest, nothing unavailable", async (t) => {
  const r = await call(gw.url, "GET", "/api/v1/agent-packages");
  t.equal(r.status, 200);
  t.same(r.body, { latest: "0.10.0", versions: ["0.10.0", "0.9.0", "0.1.0"], unavailable: null });
});

t.test("no releases: agent.sh is a script that says so; the listing too; the files 404", async (t) => {
  const empty = join(fx.dir, "..", "empty");
  mkdirSync(empty, { recursive: true });
  const none = await startInstallGateway(nats, { dir: empty, public_key_file: fx.pubFile });
  t.teardown(() => none.stop());
  await isFailingScript(t, none.url, "agent_packages_unavailable", NO_PACKAGES_DETAIL, "no releases");
  const script = (await call(none.url, "GET", "/install/agent.sh")).text;
  t.ok(script.includes("npm run build:agent-package"), "says how to publish one");
  t.ok(script.includes("npm run up"), "and that npm run up builds one in the background");
  const list = await call(none.url, "GET", "/api/v1/agent-packages");
  t.equal(list.status, 200);
  t.same(list.body, {
    latest: null,
    versions: [],
    unavailable: { code: "agent_packages_unavailable", detail: NO_PACKAGES_DETAIL },
  });
  isProblem(
    t,
    await call(none.url, "GET", "/install/releases/0.1.0/manifest.json"),
    404,
    "agent_packages_unavailable",
    "manifest",
  );
  t.equal((await call(none.url, "GET", "/install/release.pub")).status, 200, "the key is still served");

  // Unset, missing, not a key, and the private key itself: the gateway must hold only the public one.
  for (const key of ["", join(fx.dir, "..", "missing.key"), join(fx.dir, "0.1.0/manifest.json"), fx.keyFile]) {
    const nokey = await startInstallGateway(nats, { dir: fx.dir, public_key_file: key });
    t.teardown(() => nokey.stop());
    const what = key ? `key file ${key.split("/").pop()}` : "no key configured";
    await isFailingScript(t, nokey.url, "release_signing_unavailable", /release public key/, `${what}: agent.sh`);
    const list = await call(nokey.url, "GET", "/api/v1/agent-packages");
    t.equal(list.status, 200, `${what}: listing`);
    t.match(list.body, { latest: null, versions: [], unavailable: { code: "release_signing_unavailable" } });
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
    // Nothing can be checked without the key, so nothing of a release is served either.
    isProblem(
      t,
      await call(nokey.url, "GET", "/install/releases/0.1.0/manifest.json"),
      503,
      "release_signing_unavailable",
      `${what}: manifest`,
    );
  }
});

t.test("the gateway signs nothing: it serves the stored signature, and only one that verifies", async (t) => {
  const own = releaseFixture();
  own.addRelease("1.0.0");
  own.addRelease("1.1.0");
  // Written by someone without the release key: signed with another key, a manifest changed after
  // signing, and no signature at all.
  own.addRelease("1.2.0", generateKeyPairSync("ed25519").privateKey);
  own.addRelease("1.3.0");
  const m13 = join(own.dir, "1.3.0/manifest.json");
  writeFileSync(m13, readFileSync(m13, "utf8").replace(/"size":\d+/, '"size":1'));
  own.addRelease("1.4.0");
  rmSync(join(own.dir, "1.4.0/manifest.json.sig"));
  const mem = memoryLogger("gateway", "info");
  const g = await startInstallGateway(nats, { dir: own.dir, public_key_file: own.pubFile }, {}, mem.log);
  t.teardown(async () => {
    await g.stop();
    own.cleanup();
  });

  const sig = await call(g.url, "GET", "/install/releases/1.1.0/manifest.json.sig");
  t.equal(sig.status, 200);
  t.equal(sig.text, readFileSync(join(own.dir, "1.1.0/manifest.json.sig"), "utf8"), "the stored signature, as stored");
  // Signed at build: replacing the stored signature by another valid one changes what is served.
  const resigned = signManifest(
    readFileSync(join(own.dir, "1.1.0/manifest.json")),
    createPrivateKey(readFileSync(own.keyFile)),
  );
  t.equal(sig.text.trim(), resigned, "Ed25519 is deterministic: the same signature the build key makes");

  const script = await call(g.url, "GET", "/install/agent.sh");
  t.ok(script.text.includes("LATEST_VERSION='1.1.0'"), "the latest is the newest release that verifies");
  for (const v of ["1.2.0", "1.3.0", "1.4.0"]) {
    for (const f of ["manifest.json", "manifest.json.sig", `orch-agent-${v}-linux-amd64.tar.gz`])
      isProblem(
        t,
        await call(g.url, "GET", `/install/releases/${v}/${f}`),
        404,
        "agent_version_not_found",
        `${v} ${f}`,
      );
  }
  const refused = mem.lines.filter((l) => l.includes("does not verify with releases.public_key_file"));
  t.same(
    refused.map((l) => JSON.parse(l).version).sort(),
    ["1.2.0", "1.3.0"],
    "each refusal logged once (1.4.0 has no signature, so it is no release at all)",
  );
});

t.test("config: the gateway refuses a release signing key", async (t) => {
  t.throws(
    () => gatewayConfigSchema.parse({ releases: { dir: fx.dir, signing_key_file: fx.keyFile } }),
    /no longer used: manifests are signed once by `npm run build:agent-package/,
  );
  t.equal(
    gatewayConfigSchema.parse({ releases: { public_key_file: fx.pubFile } }).releases.public_key_file,
    fx.pubFile,
  );
});

t.test("agents service down: agent.sh is a script that says service_unavailable", async (t) => {
  const other = await startNats();
  const lone = await startInstallGateway(other, { dir: fx.dir, public_key_file: fx.pubFile });
  t.teardown(async () => {
    await lone.stop();
    await other.stop();
  });
  await isFailingScript(t, lone.url, "service_unavailable", /the agents service did not answer/, "no agents service");
  t.equal((await call(lone.url, "GET", "/install/releases/0.1.0/manifest.json")).status, 200, "releases still served");
});

t.test("a download the client aborts mid-body ends quietly: nothing logged at warn or above", async (t) => {
  const big = releaseFixture();
  const m = big.addRelease("0.1.0");
  const file = m.packages[0]!.file;
  // Far more than the socket buffers, so the response is still streaming when the client goes.
  writeFileSync(join(big.dir, "0.1.0", file), Buffer.alloc(64 * 1024 * 1024, 1));
  const mem = memoryLogger("gateway", "debug");
  const gw2 = await startInstallGateway(nats, { dir: big.dir, public_key_file: big.pubFile }, {}, mem.log);
  t.teardown(async () => {
    await gw2.stop();
    big.cleanup();
  });
  for (let i = 0; i < 3; i++) {
    const got = await new Promise<number>((resolve, reject) => {
      const req = request(`${gw2.url}/install/releases/0.1.0/${file}`, (res) => {
        res.once("data", (chunk: Buffer) => {
          req.destroy();
          resolve(res.statusCode === 200 ? chunk.length : -1);
        });
      });
      req.on("error", (err) => (req.destroyed ? undefined : reject(err)));
      req.end();
    });
    t.ok(got > 0, `download ${i + 1} started (200, first bytes received), then aborted`);
    await eventually(() => mem.lines.filter((l) => l.includes("package download aborted")).length > i);
  }
  // The gateway still serves, and by the time this answer is back any error of the aborts is logged.
  t.equal((await call(gw2.url, "GET", "/install/releases/0.1.0/manifest.json")).status, 200);
  const loud = mem.lines.map((l) => JSON.parse(l)).filter((l) => l.level >= 40);
  t.same(loud, [], "no warn/error line (was: level 50 unhandled error, ERR_HTTP_HEADERS_SENT)");
  t.match(mem.lines.join(""), /"level":20[^\n]*package download aborted/, "the abort is noted at debug");
});
