import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createTestDatabase, ensureDevCa, eventually, startNats, testLinkTls } from "@orch/kit/testing";
import { agentPool, agentsClient, startAgentsService } from "../../services/agents/test/harness.js";
import { linkCredentials } from "../src/link/trust.js";

// How a real orch-agent process authenticates the agents service: by CA, by a pinned fingerprint
// (leaf or CA, whatever the host name), never plaintext unless both sides say --insecure.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const tlsSvc = await startAgentsService(nats, db);
const plainSvc = await startAgentsService(nats, db, { insecure: true });
const agents = agentPool();
const nc = await nats.connect("observer");
const { c, as } = agentsClient(nc);
const other = mkdtempSync(join(tmpdir(), "orch-other-ca-"));
t.teardown(() => rmSync(other, { recursive: true, force: true }));
t.teardown(async () => {
  await agents.stop();
  await tlsSvc.stop();
  await plainSvc.stop();
});

const ca = testLinkTls();
/** Another CA's server certificate: what an impostor holding its own key would present. */
const impostor = ensureDevCa(other, { names: ["DNS:localhost", "IP:127.0.0.1"] });
const connected = (id: string) =>
  eventually(async () => (await c.getAgent({ id }, as).catch(() => undefined))?.connected === true, 15_000);
const registered = async (id: string) => (await c.listAgents({}, as)).agents.some((a) => a.nodeId === id);
const msg = (m: string) => (r: Record<string, any>) => r.msg === m;

t.test("a wrong --server-fingerprint: the agent refuses to connect, says why, keeps trying", async (t) => {
  const a = agents.spawn(["--server", tlsSvc.server, "--server-fingerprint", impostor.fingerprint]);
  const id = await a.nodeId();
  const refusals = await eventually(() => {
    const r = a.records().filter(msg("refusing to connect: the server is not the one this agent trusts"));
    return r.length >= 2 ? r : undefined;
  }, 20_000);
  t.equal(refusals[0]!.level, "error", "logged as an error");
  t.equal(refusals[0]!.reason, "server_fingerprint_mismatch");
  t.match(refusals[0]!.detail, ca.fingerprint, "names what the server presented");
  t.match(refusals[0]!.detail, impostor.fingerprint, "and the pin it wanted");
  t.ok(refusals[1]!.retry_in_ms >= 0, "it keeps retrying with its backoff");
  t.notOk(await registered(id), "the server never saw its Hello");
  t.equal(a.child.exitCode, null, "still running");
  await a.signal("SIGTERM");
});

t.test("the right fingerprint connects: the server certificate's, or its CA's", async (t) => {
  const opensslForm = ca.caFingerprint
    .replace("sha256:", "")
    .toUpperCase()
    .replace(/(..)(?!$)/g, "$1:");
  for (const pin of [ca.fingerprint, ca.caFingerprint, opensslForm]) {
    const a = agents.spawn(["--server", tlsSvc.server, "--server-fingerprint", pin]);
    const id = await a.nodeId();
    await connected(id);
    t.pass(`pinned ${pin.slice(0, 20)}… connects`);
    t.match((await a.waitFor(msg("link up"))).status, "pending");
    await a.signal("SIGTERM");
  }
});

t.test("a pin does not depend on the host name the agent dialled", async (t) => {
  // A server whose certificate names only link.example, dialled as 127.0.0.1.
  const dir = mkdtempSync(join(tmpdir(), "orch-named-ca-"));
  const named = ensureDevCa(dir, { names: ["DNS:link.example"] });
  const svc = await startAgentsService(nats, db, { tls_cert: named.serverCert, tls_key: named.serverKey });
  t.teardown(async () => {
    await svc.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const byCa = agents.spawn(["--server", svc.server, "--ca", named.caCert]);
  const detail = (await byCa.waitFor((r) => r.msg === "could not connect; retrying", 20_000)).detail;
  t.match(detail, /127\.0\.0\.1|altnames|host/i, "--ca checks the host name");
  t.notOk(await registered(await byCa.nodeId()));
  await byCa.signal("SIGTERM");
  const pinned = agents.spawn(["--server", svc.server, "--server-fingerprint", named.caFingerprint]);
  await connected(await pinned.nodeId());
  t.pass("--server-fingerprint does not");
  await pinned.signal("SIGTERM");
});

t.test("--ca connects; the default (system CAs) does not trust a private CA", async (t) => {
  const a = agents.spawn(["--server", tlsSvc.server, "--ca", ca.caCert]);
  await connected(await a.nodeId());
  t.pass("--ca with the issuing CA connects");
  const said = await a.waitFor(msg(`agent link: TLS, server verified by the CA in ${ca.caCert}`));
  t.match(said, { level: "info", trust: "ca" });
  await a.signal("SIGTERM");

  const d = agents.spawn(["--server", tlsSvc.server, "--tls"]);
  const id = await d.nodeId();
  await d.waitFor((r) => r.msg === "could not connect; retrying", 20_000);
  t.notOk(await registered(id), "no link without a trusted certificate");
  await d.signal("SIGTERM");

  const wrongCa = agents.spawn(["--server", tlsSvc.server, "--ca", impostor.caCert]);
  const wid = await wrongCa.nodeId();
  await wrongCa.waitFor((r) => r.msg === "could not connect; retrying", 20_000);
  t.notOk(await registered(wid), "another CA's file does not connect either");
  await wrongCa.signal("SIGTERM");
});

t.test("plaintext needs --insecure on both sides, and is a warning on both", async (t) => {
  const tlsAgent = agents.spawn(["--server", plainSvc.server, "--ca", ca.caCert]);
  const tid = await tlsAgent.nodeId();
  await tlsAgent.waitFor((r) => r.msg === "could not connect; retrying", 20_000);
  t.notOk(await registered(tid), "an agent that was not told --insecure does not talk plaintext");
  await tlsAgent.signal("SIGTERM");

  const pinAgent = agents.spawn(["--server", plainSvc.server, "--server-fingerprint", ca.fingerprint]);
  const pr = await pinAgent.waitFor((r) => r.msg === "could not connect; retrying" && r.reason === "tls_failed", 20e3);
  t.ok(pr, "a pinned agent finds no TLS server and does not fall back");
  await pinAgent.signal("SIGTERM");

  const insecure = agents.spawn(["--server", plainSvc.server, "--insecure"]);
  const warn = await insecure.waitFor((r) => r.trust === "insecure");
  t.equal(warn.level, "warn", "the agent warns");
  t.match(warn.msg, /PLAINTEXT \(--insecure\)/);
  await connected(await insecure.nodeId());
  t.pass("--insecure on both sides connects");
  await insecure.signal("SIGTERM");

  const mixed = agents.spawn(["--server", tlsSvc.server, "--insecure"]);
  const mid = await mixed.nodeId();
  await mixed.waitFor((r) => r.msg === "could not connect; retrying", 20_000);
  t.notOk(await registered(mid), "an --insecure agent cannot reach a TLS-only server either");
  await mixed.signal("SIGTERM");
});

t.test("unit: a pinned CA must be sent by the server to be found", async (t) => {
  const r = await linkCredentials({ kind: "pin", fingerprint: impostor.caFingerprint }, tlsSvc.server);
  t.match(r, { ok: false, reason: "server_fingerprint_mismatch" });
  const ok = await linkCredentials({ kind: "pin", fingerprint: ca.caFingerprint }, tlsSvc.server);
  t.equal(ok.ok, true, "the full chain the dev CA writes carries the CA");
});
