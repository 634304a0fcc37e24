import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import * as grpc from "@grpc/grpc-js";
import { agentLinkGrpcDefinition, type AgentFrame, type ServerFrame } from "@orch/contracts";
import { createTestDatabase, eventually, startNats } from "@orch/kit/testing";
import {
  agentsClient,
  collectEvents,
  memIdentity,
  startAgentsService,
  testCaCredentials,
  testLink,
} from "./harness.js";

// The signed handshake (docs/agents.md#the-link) over real gRPC: Hello → Challenge → signature → Welcome or Refusal.
const nats = await startNats();
const db = await createTestDatabase();
const svc = await startAgentsService(nats, db, { handshake_timeout_seconds: 1 });
const nc = await nats.connect("observer");
const ev = collectEvents(nc);
const { c, as } = agentsClient(nc);
t.teardown(async () => {
  await svc.stop();
  await db.drop();
  await nats.stop();
});

const row = (nodeId: string) =>
  svc.deps.pool.query("SELECT * FROM agents WHERE node_id = $1", [nodeId]).then((r) => r.rows[0]);

t.test("a good signature is welcomed as pending, registered and connected", async (t) => {
  const id = memIdentity();
  const link = testLink(svc.server, id, { attributes: { hostname: "alpha", os: "linux", arch: "x86_64" } });
  const w = await link.up();
  t.equal(w.nodeId, id.nodeId, "the welcome names the node id derived from the key");
  t.equal(w.status, "pending");
  t.equal(w.name, "");
  const r = await row(id.nodeId);
  t.equal(r.status, "pending");
  t.equal(r.connected, true);
  t.equal(r.public_key, id.publicKeyHex);
  t.equal(r.version, "9.9.9-test");
  t.equal(r.address, "127.0.0.1");
  t.same(r.attributes, { hostname: "alpha", os: "linux", arch: "x86_64" }, "hello attributes are stored");
  t.equal(r.replica, svc.svc.replica);
  const reg = await ev.wait("agent.registered", id.nodeId);
  t.equal(reg.actor?.type, "agent");
  await ev.wait("agent.connected", id.nodeId);

  link.close();
  const disc = await ev.wait("agent.disconnected", id.nodeId);
  t.equal(disc.severity, "info", "a pending agent dropping is info");
  t.equal((await row(id.nodeId)).connected, false);

  const again = testLink(svc.server, id);
  await again.up();
  await eventually(() => ev.of("agent.connected", id.nodeId).length === 2);
  t.equal(ev.of("agent.registered", id.nodeId).length, 1, "a known agent is not registered twice");
  again.close();
  await eventually(() => ev.of("agent.disconnected", id.nodeId).length === 2);
});

t.test("a bad signature is refused and nothing is stored", async (t) => {
  const real = memIdentity();
  const forged = { ...real, sign: () => Buffer.alloc(64, 7) };
  const link = testLink(svc.server, forged);
  const o = await link.outcome;
  t.match(o, { kind: "refused", reason: "bad_signature", wasUp: false });
  t.notOk(await row(real.nodeId), "no registry row");
  t.equal(ev.events.filter((e) => e.target?.id === real.nodeId).length, 0, "no event");
});

t.test("someone else's public key cannot be claimed", async (t) => {
  const victim = memIdentity();
  const attacker = memIdentity();
  const link = testLink(svc.server, { ...victim, sign: attacker.sign });
  t.match(await link.outcome, { kind: "refused", reason: "bad_signature" });
  t.notOk(await row(victim.nodeId));
});

t.test("a malformed public key is refused", async (t) => {
  const id = memIdentity();
  const link = testLink(svc.server, { ...id, publicKeyHex: "zz".repeat(32) });
  t.match(await link.outcome, { kind: "refused", reason: "invalid_public_key" });
});

t.test("a stream that never says hello is closed after the handshake timeout", async (t) => {
  const client = new grpc.Client(svc.server, testCaCredentials());
  const def = agentLinkGrpcDefinition.connect;
  const call = client.makeBidiStreamRequest<AgentFrame, ServerFrame>(
    def.path,
    def.requestSerialize,
    def.responseDeserialize,
  );
  const frames: ServerFrame[] = [];
  call.on("data", (f: ServerFrame) => frames.push(f));
  await new Promise<void>((resolve) => {
    call.on("end", () => resolve());
    call.on("error", () => resolve());
  });
  client.close();
  t.equal(frames[0]?.frame.case, "refusal");
  t.equal(
    frames[0]?.frame.value && "reason" in frames[0].frame.value ? frames[0].frame.value.reason : "",
    "handshake_timeout",
  );
});

t.test("a rejected agent is told at once and refused at every later handshake", async (t) => {
  const id = memIdentity();
  const link = testLink(svc.server, id);
  await link.up();
  await c.setApproval({ nodeId: id.nodeId, status: "rejected" }, as);
  t.match(
    await link.outcome,
    { kind: "refused", reason: "agent_rejected", wasUp: true },
    "the live link is refused and closed",
  );
  await eventually(async () => (await row(id.nodeId)).connected === false);
  const connectedBefore = ev.of("agent.connected", id.nodeId).length;

  const retry = testLink(svc.server, id);
  t.match(
    await retry.outcome,
    { kind: "refused", reason: "agent_rejected", wasUp: false },
    "reconnecting is refused before any welcome",
  );
  t.equal((await row(id.nodeId)).connected, false);
  t.equal(ev.of("agent.connected", id.nodeId).length, connectedBefore, "no connected event for a refused agent");
});

t.test("an approved agent is told its name, and its drop is a warning", async (t) => {
  const id = memIdentity();
  const link = testLink(svc.server, id);
  await link.up();
  await c.setApproval({ nodeId: id.nodeId, status: "approved", name: "hs-approved" }, as);
  await eventually(() => link.welcomes.length === 2);
  t.match(link.welcomes[1], { status: "approved", name: "hs-approved" }, "a fresh Welcome carries the new status");
  link.close();
  const disc = await ev.wait("agent.disconnected", id.nodeId);
  t.equal(disc.severity, "warning");
  t.equal(disc.target?.name, "hs-approved");
});

t.test("a second link of the same agent replaces the first", async (t) => {
  const id = memIdentity();
  const first = testLink(svc.server, id);
  await first.up();
  const second = testLink(svc.server, id);
  await second.up();
  t.match(await first.outcome, { kind: "closed", wasUp: true }, "the older link is closed");
  const r = await row(id.nodeId);
  t.equal(r.connected, true, "the agent stays connected through the new link");
  t.equal(svc.svc.hub.size() >= 1, true);
  second.close();
  await eventually(async () => (await row(id.nodeId)).connected === false);
});

t.test("TLS: the link serves the configured certificate", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "orch-agents-tls-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ],
    { stdio: "ignore" },
  );
  const tls = await startAgentsService(nats, db, { tls_cert: cert, tls_key: key });
  t.teardown(() => tls.stop());

  const ok = testLink(tls.server, memIdentity(), { credentials: grpc.credentials.createSsl(readFileSync(cert)) });
  t.equal((await ok.up()).status, "pending", "a client trusting the certificate completes the handshake");
  ok.close();

  const plain = testLink(tls.server, memIdentity(), { credentials: grpc.credentials.createInsecure() });
  t.match(await plain.outcome, { kind: "closed", wasUp: false }, "a plaintext client gets nowhere");
  t.ok(readFileSync(cert, "utf8").includes("BEGIN CERTIFICATE"));
});
