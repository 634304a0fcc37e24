// Bus permissions (deploy/nats/permissions.mjs → accounts.conf, local.conf, the NATS ConfigMap):
// the generated files are current, the data is consistent, and a real nats-server started with
// deploy/nats/local.conf enforces them.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { connect, errors, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import {
  allowed,
  devPassword,
  lint,
  passwordEnv,
  permissionsFor,
  randomPasswords,
  renderAccountsConf,
  renderDevConf,
  staleFiles,
} from "../../deploy/nats/generate.mjs";
import { SERVICES, USERS } from "../../deploy/nats/permissions.mjs";
import { repoPath } from "./lib/kustomize.js";

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? "/usr/sbin/nats-server";

t.test("generated files are up to date (node deploy/nats/generate.mjs)", async (t) => {
  t.same(staleFiles(), []);
});

t.test("permission data is consistent", async (t) => {
  t.same(lint(), [], "every service has a user, every request has a responder");
  t.same(Object.keys(USERS).sort(), [...SERVICES].sort());
});

t.test("the permission matrix says what docs/deploy.md says", async (t) => {
  const can = (u: string, s: string) => allowed(u, "publish", s);
  const sub = (u: string, s: string) => allowed(u, "subscribe", s);
  // gateway: every service's RPCs, except resolving secrets; never audit events.
  for (const s of SERVICES.filter((x) => x !== "gateway"))
    t.ok(can("gateway", `orch.${s}.SomeMethod`), `gateway → orch.${s}.*`);
  t.notOk(can("gateway", "orch.secrets.Resolve"), "gateway ↛ orch.secrets.Resolve");
  t.ok(can("gateway", "orch.secrets.List"), "gateway → orch.secrets.List");
  t.notOk(can("gateway", "audit.agent.approved"), "gateway ↛ audit.>");
  t.notOk(can("gateway", "orch.auth.revoked"), "gateway cannot forge revocations");
  t.notOk(can("gateway", "orch.agent.node1.Exec"), "gateway does not talk to agents directly");
  t.notOk(can("gateway", "$JS.API.STREAM.DELETE.AUDIT"), "gateway has no JetStream API");
  t.ok(can("gateway", "orch.term.s1.in") && sub("gateway", "orch.term.s1.out"), "gateway pub/sub terminal data");
  t.ok(sub("gateway", "orch.auth.revoked"), "gateway hears revocations");
  t.notOk(sub("gateway", "audit.agent.approved"), "gateway cannot read audit events");
  t.notOk(sub("gateway", "orch.secrets.Resolve"), "gateway cannot listen on secret resolution");
  // state
  t.ok(can("state", "orch.secrets.Resolve"), "state → orch.secrets.Resolve");
  t.ok(can("state", "orch.agent.node1.Apply"), "state → orch.agent.*.>");
  t.ok(can("state", "orch.agents.List"), "state → orch.agents.>");
  t.notOk(can("state", "orch.secrets.Create"), "state ↛ other secrets RPCs");
  // run progress: state announces, gateways listen; nobody else can forge it.
  t.ok(can("state", "orch.state.runs.01J0000000000000000000000A"), "state → orch.state.runs.*");
  t.ok(sub("gateway", "orch.state.runs.01J0000000000000000000000A"), "gateway hears run progress");
  for (const u of SERVICES.filter((x) => x !== "state"))
    t.notOk(can(u, "orch.state.runs.01J0000000000000000000000A"), `${u} cannot forge run progress`);
  // terminal
  t.ok(can("terminal", "orch.agent.node1.OpenTerminal"), "terminal → orch.agent.*.>");
  t.ok(can("terminal", "orch.term.s1.out") && sub("terminal", "orch.term.s1.in"), "terminal pub/sub orch.term.>");
  t.ok(can("terminal", "orch.agents.GetAgent"), "terminal → orch.agents.GetAgent (scoped operators)");
  t.notOk(can("terminal", "orch.agents.SetApproval"), "terminal ↛ other agents RPCs");
  // agents
  t.ok(
    sub("agents", "orch.agent.node1.Apply") && sub("agents", "orch.agents.Approve"),
    "agents serves orch.agent.*.> and orch.agents.>",
  );
  // only secrets serves Resolve
  for (const u of SERVICES)
    t.equal(
      sub(u, "orch.secrets.Resolve"),
      u === "secrets",
      `${u} ${u === "secrets" ? "serves" : "cannot serve"} orch.secrets.Resolve`,
    );
  // audit events: written by every service that owns data, consumed by audit and notify.
  for (const u of SERVICES)
    t.equal(
      can(u, "audit.x.y"),
      u !== "gateway",
      `${u} ${u === "gateway" ? "cannot publish" : "publishes"} audit events`,
    );
  // Acks are responses to delivered messages (allow_responses), never an explicit right: nats-server
  // forgets a delivered reply subject only when the response permission is used, and explicit ack
  // rights made ingest walk thousands of such records per message (deploy/nats/permissions.mjs).
  for (const u of SERVICES) {
    const consumes = u === "audit" || u === "notify";
    t.notOk(can(u, "$JS.ACK.AUDIT.audit.1.1.1.1.1"), `${u} holds no explicit ack right`);
    if (consumes) t.ok(permissionsFor(u).allowResponses, `${u} acks AUDIT messages as responses`);
  }
  for (const u of SERVICES)
    t.notOk(
      can(u, "$JS.API.STREAM.DELETE.AUDIT") || can(u, "$JS.API.STREAM.PURGE.AUDIT"),
      `${u} cannot delete or purge AUDIT`,
    );
});

t.test("the development buses (npm run up, tests) render the deployment's users", async (t) => {
  const passwords = randomPasswords();
  t.same(Object.keys(passwords).sort(), [...SERVICES].sort(), "a password for every service");
  t.equal(new Set(Object.values(passwords)).size, SERVICES.length, "each its own");
  t.same(randomPasswords({ ...passwords, gateway: undefined as never }).auth, passwords.auth, "kept ones are kept");
  const dev = renderDevConf(passwords);
  // Same text as accounts.conf once each password is put in place of its variable.
  const block = (conf: string) => conf.slice(conf.indexOf("authorization {"));
  let expected = block(renderAccountsConf());
  for (const s of SERVICES) expected = expected.replace(`$${passwordEnv(s)}`, JSON.stringify(passwords[s]));
  t.equal(block(dev), expected, "the authorization block is accounts.conf's, with these passwords");
  t.throws(() => renderDevConf({ ...passwords, secrets: "" }), /secrets has no password/, "every user needs one");
  t.throws(
    () => renderDevConf(passwords, [{ name: "secrets", password: "x".repeat(20), note: "" }]),
    /would shadow/,
    "an extra user cannot replace a service's",
  );
  const extra = renderDevConf(passwords, [{ name: "orch-test", password: "p".repeat(20), note: "tests" }]);
  t.match(extra, /user: "orch-test"\n\s+password: "p{20}"\n\s+\}/, "an extra user has no permissions block");
  t.notMatch(dev, /orch-test/, "and is only there when asked for");
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Waits until `fn` stops throwing (nats-server takes a moment to listen). */
async function eventually<T>(fn: () => Promise<T>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

t.test("nats-server with deploy/nats/local.conf enforces the permissions", async (t) => {
  const port = await freePort();
  const store = mkdtempSync(join(tmpdir(), "orch-nats-"));
  const server: ChildProcess = spawn(
    NATS_SERVER,
    ["-c", repoPath("deploy", "nats", "local.conf"), "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let serverLog = "";
  server.stderr!.on("data", (d: Buffer) => (serverLog += d.toString()));
  const exited = new Promise<number | null>((resolve) => server.once("exit", (code) => resolve(code)));
  const conns: NatsConnection[] = [];
  t.teardown(async () => {
    await Promise.all(conns.map((c) => c.close().catch(() => {})));
    if (server.exitCode === null) {
      server.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (server.exitCode === null) server.kill("SIGKILL");
    }
    rmSync(store, { recursive: true, force: true });
  });

  const as = async (user: string, pass = devPassword(user)) => {
    const nc = await connect({
      servers: `127.0.0.1:${port}`,
      user,
      pass,
      noAsyncTraces: true,
      reconnect: false,
      inboxPrefix: `_INBOX_${user}`,
    });
    conns.push(nc);
    return nc;
  };
  /** Collects the async permission errors the server sends on a connection. */
  const violations = (nc: NatsConnection) => {
    const seen: string[] = [];
    void (async () => {
      for await (const s of nc.status())
        if (s.type === "error") seen.push(String((s as { error?: Error }).error?.message ?? ""));
    })();
    return seen;
  };

  const gateway = await eventually(() => as("gateway"));
  t.equal(server.exitCode, null, "nats-server 2.9 starts with local.conf");
  const gatewayErrors = violations(gateway);
  const auth = await as("auth");
  const state = await as("state");
  const secrets = await as("secrets");

  await t.rejects(as("gateway", "wrong"), /Authorization Violation/i, "a wrong password is refused");

  // Responders: auth answers challenges, secrets answers Resolve (both in their queue groups).
  auth.subscribe("orch.auth.>", {
    queue: "auth",
    callback: (_e, m) => void m.respond(new TextEncoder().encode("nonce")),
  });
  let resolveCalls = 0;
  secrets.subscribe("orch.secrets.>", {
    queue: "secrets",
    callback: (_e, m) => {
      if (m.subject === "orch.secrets.Resolve") resolveCalls++;
      m.respond(new TextEncoder().encode("secret-value"));
    },
  });
  await auth.flush();
  await secrets.flush();

  const reply = await gateway.request("orch.auth.Challenge", new Uint8Array(), { timeout: 2000 });
  t.equal(reply.string(), "nonce", "gateway → orch.auth.Challenge is answered by auth");

  const refused = await gateway.request("orch.secrets.Resolve", new Uint8Array(), { timeout: 2000 }).then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(refused, "gateway → orch.secrets.Resolve fails");
  const chain: unknown[] = [];
  for (let e: unknown = refused, i = 0; e && i < 4; e = (e as { cause?: unknown }).cause, i++) chain.push(e);
  t.ok(
    chain.some((e) => e instanceof errors.PermissionViolationError),
    `the server refuses it as a permissions violation (${(refused as Error)?.message})`,
  );
  t.equal(resolveCalls, 0, "the secrets service never saw the gateway's Resolve");

  const resolved = await state.request("orch.secrets.Resolve", new Uint8Array(), { timeout: 2000 });
  t.equal(resolved.string(), "secret-value", "state → orch.secrets.Resolve is answered by secrets");
  t.equal(resolveCalls, 1);

  // Audit events: the AUDIT stream takes an event from auth (JetStream publish) but nothing from
  // the gateway.
  const jsm = await jetstreamManager(auth);
  await jsm.streams.add({ name: "AUDIT", subjects: ["audit.>"] });
  const ack = await jetstream(auth).publish("audit.auth.login.succeeded", new Uint8Array([1]), { msgID: "01TEST" });
  t.equal(ack.stream, "AUDIT", "auth publishes audit events through JetStream");
  gateway.publish("audit.x", new Uint8Array([2]));
  gateway.publish("orch.auth.revoked", new Uint8Array([3]));
  await gateway.flush();
  await eventually(async () => {
    if (!gatewayErrors.some((m) => /Permissions Violation for Publish to "audit\.x"/.test(m)))
      throw new Error("not yet");
  }, 3000).catch(() => {});
  t.ok(
    gatewayErrors.some((m) => /Permissions Violation for Publish to "audit\.x"/.test(m)),
    "publishing audit.x is refused by the server",
  );
  t.ok(
    gatewayErrors.some((m) => /Permissions Violation for Publish to "orch\.auth\.revoked"/.test(m)),
    "forging a revocation is refused",
  );
  t.equal((await jsm.streams.info("AUDIT")).state.messages, 1, "the AUDIT stream holds only auth's event");

  // The gateway cannot read audit events either.
  gateway.subscribe("audit.>", { callback: () => {} });
  await gateway.flush();
  await eventually(async () => {
    if (!gatewayErrors.some((m) => /Permissions Violation for Subscription to "audit\.>"/.test(m)))
      throw new Error("not yet");
  }, 3000).catch(() => {});
  t.ok(
    gatewayErrors.some((m) => /Permissions Violation for Subscription to "audit\.>"/.test(m)),
    "subscribing to audit.> is refused",
  );

  // The audit service consumes AUDIT through a durable consumer, and cannot delete the stream.
  const audit = await as("audit");
  const ajsm = await jetstreamManager(audit);
  await ajsm.consumers.add("AUDIT", { durable_name: "audit", ack_policy: "explicit" as never });
  const consumer = await jetstream(audit).consumers.get("AUDIT", "audit");
  const msg = await consumer.next({ expires: 2000 });
  t.equal(msg?.subject, "audit.auth.login.succeeded", "audit consumes the event");
  t.equal(await msg?.ackAck(), true, "and acks it");
  await t.rejects(ajsm.streams.delete("AUDIT"), /Permissions Violation/i, "audit cannot delete the stream");

  t.equal(server.exitCode, null, "the server ran throughout");
  t.notMatch(serverLog, /\[FTL\]/, "no fatal server errors");
});
