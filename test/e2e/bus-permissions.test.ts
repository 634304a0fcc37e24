// Bus permissions (docs/deploy.md#7-bus-permissions): the whole system on a nats-server running the production bus permissions
// (deploy/nats/local.conf), every service under its own NATS user. A cross-service flow through the
// HTTP API works; the gateway's identity is refused orch.secrets.Resolve, audit.x and another
// service's reply inbox by the server itself; and nothing the services do during the flow is a
// permission violation (the server's own log is the witness, so no service can hide one).
// Needs every workspace built (services/*/dist/main.js, agent/dist/main.js).
import t from "tap";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { connect, errors, type NatsConnection } from "@nats-io/transport-node";
import { ResolveRequestSchema, SecretsService } from "@orch/contracts";
import { OrchError, rpcClient } from "@orch/kit";
import { createTestDatabase, ed25519, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { devPassword } from "../../deploy/nats/generate.mjs";
import { agentPool } from "../../services/agents/test/harness.js";
import { attach } from "../../services/terminal/test/harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const LOCAL_CONF = join(ROOT, "deploy/nats/local.conf");
const ALL = ["auth", "agents", "secrets", "notify", "audit", "state", "terminal", "gateway"];
const services = ALL.filter((s) => existsSync(join(ROOT, "services", s, "dist/main.js")));
const hasTerminal = services.includes("terminal");
const PROBE = "bus-probe";

// local.conf is included unchanged; the wrapper only adds a log file, so the server's own record
// of every refused publish/subscribe can be read back. (include paths are relative to the file.)
const work = mkdtempSync(join(tmpdir(), "orch-e2e-buse2e-"));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const serverLog = join(work, "nats.log");
const serverConf = join(work, "server.conf");
writeFileSync(serverConf, `include "${relative(work, LOCAL_CONF)}"\nlog_file: "${serverLog}"\n`);

const nats = await startNats({ configFile: serverConf, owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const system = await startSystem({
  owner: t,
  nats,
  db,
  services,
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_SECRETS_KEYS: `k1:${randomBytes(32).toString("base64")}`,
    ORCH_TERMINAL_TRANSCRIPT_DIR: join(work, "transcripts"),
    // Scheduled drift checks ask notify for maintenance status and the agent for its state.
    ORCH_STATE_DRIFT_INTERVAL_SECONDS: "2",
    ORCH_NOTIFY_OPERATORS_CACHE_MS: "0",
  },
  serviceEnv: (name) => ({ ORCH_NATS_USER: name, ORCH_NATS_PASSWORD: devPassword(name) }),
});
const agents = agentPool();
const probes: NatsConnection[] = [];
t.teardown(async () => {
  await Promise.all(probes.map((c) => c.close().catch(() => {})));
  await agents.stop();
});

const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown, as = token) =>
  system.api(method, `/api/v1${path}`, { token: as, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

/** "Publish Violation" / "Subscription Violation" lines of the server log, with the client they came from. */
const violations = () =>
  (existsSync(serverLog) ? readFileSync(serverLog, "utf8") : "").split("\n").filter((l) => /Violation/i.test(l));

const SECRET = `bus-${randomBytes(12).toString("hex")}`;
const files = join(work, "files");
const flow = { nodeId: "" };

t.test("every service runs under its own bus user; anonymous clients are refused", async (t) => {
  t.ok(services.length >= 7, `services started: ${services.join(", ")}`);
  const st = await must(api("GET", "/status"), 200);
  t.equal(st.status, "ok", "gateway /status: every service answers its ping under the permissions");
  await t.rejects(
    connect({ servers: nats.url, noAsyncTraces: true, reconnect: false }),
    /Authorization Violation/i,
    "no anonymous access",
  );
  await t.rejects(
    connect({ servers: nats.url, user: "state", pass: devPassword("gateway"), noAsyncTraces: true, reconnect: false }),
    /Authorization Violation/i,
    "a service's password is its own",
  );
});

t.test("a cross-service flow through the HTTP API works under the permissions", async (t) => {
  // Operators (auth).
  const carolKey = ed25519();
  const carol = await must(
    api("POST", "/operators", { name: "carol", public_key: carolKey.publicKeyHex, role: "operator" }),
    201,
  );
  t.equal(carol.name, "carol");
  const carolToken = await system.login(carolKey);

  // A real agent over the gRPC link (agents): pending → approved with a name → tagged.
  mkdirSync(files, { recursive: true });
  const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`]);
  const nodeId = await agent.nodeId();
  flow.nodeId = nodeId;
  const pending = await eventually(async () => {
    const r = await api("GET", `/agents/${nodeId}`);
    return r.status === 200 && r.body.connected ? r.body : undefined;
  }, 20_000);
  t.equal(pending.status, "pending", "the new agent appears pending");
  t.equal(
    (await must(api("POST", `/agents/${nodeId}`, { status: "approved", name: "bus-1" }), 200)).status,
    "approved",
  );
  await must(api("PUT", `/agents/${nodeId}/tags`, { tags: { env: "e2e", slot: "s1" } }), 200);

  // A secret only this agent may receive (secrets), used by a module (state → secrets.Resolve).
  const secret = await must(
    api("POST", "/secrets", { name: "bus_token", value: SECRET, restriction: { node_ids: [nodeId] } }),
    201,
  );
  t.same(secret.restriction.node_ids, [nodeId]);
  await must(
    api("POST", "/modules", {
      name: "bus-flow",
      content: [
        "name: bus-flow",
        "resources:",
        "  - id: creds",
        "    type: file",
        `    path: ${files}/{{ tags.slot }}.conf`,
        '    content: "token={{ secrets.bus_token }} env={{ tags.env }}\\n"',
        "",
      ].join("\n"),
    }),
    201,
  );
  const op = await must(api("POST", "/agents/bus-1/apply?wait=30", { modules: ["bus-flow"] }), 200);
  t.equal(op.status, "succeeded", `the apply succeeded (${op.error_code || "no error"})`);
  t.same(op.summary, { ok: 0, changed: 1, failed: 0, skipped: 0, unsupported: 0 });
  t.equal(
    readFileSync(join(files, "s1.conf"), "utf8"),
    `token=${SECRET} env=e2e\n`,
    "the file has the rendered secret and tag",
  );
  t.notOk(JSON.stringify(op).includes(SECRET), "the operation does not carry the value");
  // The scheduled drift check (state asks notify for maintenance status, then the agent).
  const drift = await eventually(async () => {
    const r = await api("GET", `/agents/${nodeId}/state/operations?kind=drift&limit=10`);
    return r.body?.operations?.find((o: { status: string }) => o.status === "succeeded");
  }, 20_000);
  t.equal(drift.kind, "drift", "a scheduled drift check ran to completion");

  // Maintenance windows (notify), followed live on the audit stream (audit → feed → gateway).
  const tail = await openTail("event_type=maintenance.window.created");
  const now = Math.floor(Date.now() / 1000);
  const win = await must(
    api("POST", "/maintenance-windows", { starts_at: now + 3600, ends_at: now + 7200, reason: "bus e2e" }),
    201,
  );
  const windows = await must(api("GET", "/maintenance-windows?limit=100"), 200);
  t.ok(
    windows.windows.some((w: { id: string }) => w.id === win.id),
    "the window is listed",
  );
  t.match(
    await tail.until((s) => s.includes(win.id)),
    /event: audit/,
    "the live audit stream delivers the window's event",
  );
  tail.close();

  // A warning event becomes a notification for the operators (notify consumes AUDIT, asks auth).
  // (The first failed login of a known operator: unknown keys are recorded but notify nobody.)
  const failing = ed25519();
  await must(api("POST", "/operators", { name: "failing", public_key: failing.publicKeyHex }), 201);
  const ch = await system.api("POST", "/api/v1/auth/challenge", { body: { public_key: failing.publicKeyHex } });
  const badSig = { public_key: failing.publicKeyHex, nonce: ch.body.nonce, signature: "00".repeat(64) };
  t.equal((await system.api("POST", "/api/v1/auth/verify", { body: badSig })).status, 401);
  const n = await eventually(async () => {
    const r = await api("GET", "/notifications?limit=100", undefined, carolToken);
    return r.status === 200 &&
      r.body.notifications.some((x: { event_type: string }) => x.event_type === "auth.login.failed")
      ? r.body
      : undefined;
  }, 20_000);
  t.ok(n.notifications.length >= 1, "GET /notifications shows the failed login to carol");

  // A terminal session (terminal ↔ agent over orch.term.>, bridged by the gateway's WebSocket).
  if (hasTerminal) {
    const o = await must(api("POST", `/terminal/${nodeId}`), 201);
    const r = await attach(o.ws_url);
    if (!r.ok) throw new Error(`attach refused: ${r.status} ${JSON.stringify(r.body)}`);
    const marker = `bus-${randomBytes(4).toString("hex")}`;
    r.a.send(`echo ${marker}-$((6*7)); exit\r`);
    const end = await r.a.closed;
    t.match(r.a.text(), `${marker}-42`, "the shell's output came back through the bus");
    t.equal(end.reason, "exit:0");
  }

  // Every service's events reached the audit store through JetStream.
  const expected = [
    "auth.login.succeeded",
    "auth.login.failed",
    "operator.created",
    "agent.registered",
    "agent.approved",
    "agent.tags.updated",
    "secret.created",
    "secret.used",
    "module.uploaded",
    "state.apply.succeeded",
    "maintenance.window.created",
    ...(hasTerminal ? ["terminal.session.opened", "terminal.session.closed"] : []),
  ];
  const seen = await eventually(async () => {
    const r = await api("GET", "/audit?limit=500");
    const types = new Set<string>(r.body?.events?.map((e: { event_type: string }) => e.event_type) ?? []);
    return expected.every((x) => types.has(x)) ? types : undefined;
  }, 20_000).catch(
    async () =>
      new Set<string>(
        (await api("GET", "/audit?limit=500")).body.events.map((e: { event_type: string }) => e.event_type),
      ),
  );
  t.same(
    expected.filter((x) => !seen.has(x)),
    [],
    "GET /audit shows every event of the flow",
  );
});

t.test("the gateway's identity is refused by the server; the services keep working", async (t) => {
  const gw = await connect({
    servers: nats.url,
    user: "gateway",
    pass: devPassword("gateway"),
    name: PROBE,
    inboxPrefix: "_INBOX_gateway",
    noAsyncTraces: true,
    reconnect: false,
  });
  probes.push(gw);
  const asyncErrors: string[] = [];
  void (async () => {
    for await (const s of gw.status())
      if (s.type === "error") asyncErrors.push(String((s as { error?: Error }).error?.message ?? ""));
  })();
  const before = (await must(api("GET", "/audit?event_type=secret.used&limit=500"), 200)).events.length;

  // A well-formed Resolve for the agent that may receive the secret: refused before it leaves the server.
  const req = toBinary(
    ResolveRequestSchema,
    create(ResolveRequestSchema, { name: "bus_token", nodeId: flow.nodeId, operationId: "probe" }),
  );
  const refused = await gw.request("orch.secrets.Resolve", req, { timeout: 3000 }).then(
    (m) => m,
    (err: unknown) => err,
  );
  const chain: unknown[] = [];
  for (let e: unknown = refused, i = 0; e && i < 4; e = (e as { cause?: unknown }).cause, i++) chain.push(e);
  t.ok(
    chain.some((e) => e instanceof errors.PermissionViolationError),
    `raw request: permissions violation (${(refused as Error)?.message})`,
  );

  // The same through the kit's typed client, as gateway code would call it; a sibling RPC still works.
  const secrets = rpcClient(gw, "secrets", SecretsService, { timeoutMs: 3000 });
  const call = { actor: { id: "probe", name: "probe", type: "operator", role: "admin" } } as const;
  const typed = await secrets.resolve({ name: "bus_token", nodeId: flow.nodeId, operationId: "probe" }, call).then(
    (r) => r,
    (err: unknown) => err,
  );
  t.ok(
    typed instanceof OrchError && typed.reason === "bus_permission_denied",
    `typed client: ${(typed as OrchError).reason}`,
  );
  t.notOk(JSON.stringify(typed ?? "").includes(SECRET), "no value came back");
  const listed = await secrets.listSecrets({ limit: 10, cursor: "" }, call);
  t.ok(
    listed.secrets.some((s) => s.name === "bus_token"),
    "the gateway identity may still list secrets (metadata)",
  );

  gw.publish("audit.x", new TextEncoder().encode("forged"));
  // A refused subscription is reported to the subscription itself, not on the connection status.
  gw.subscribe("_INBOX_state.>", { callback: (err) => void (err && asyncErrors.push(err.message)) });
  await gw.flush();
  await eventually(() => asyncErrors.length >= 2, 5000).catch(() => {});
  t.ok(
    asyncErrors.some((m) => /Permissions Violation for Publish to "audit\.x"/.test(m)),
    "publishing audit.x is refused",
  );
  t.ok(
    asyncErrors.some((m) => /Permissions Violation for Subscription to "_INBOX_state\.>"/.test(m)),
    "reading the state service's replies is refused",
  );

  // The server's own log: all of it is the probe's, and includes the Resolve.
  const probeLines = violations().filter((l) => l.includes(PROBE));
  t.ok(
    probeLines.some((l) => /Publish Violation/.test(l) && l.includes('"orch.secrets.Resolve"')),
    "the server logged the refused Resolve",
  );
  t.ok(
    probeLines.some((l) => /Publish Violation/.test(l) && l.includes('"audit.x"')),
    "the server logged the refused audit.x",
  );
  t.ok(
    probeLines.some((l) => /Subscription Violation/.test(l) && l.includes('"_INBOX_state.>"')),
    "the server logged the refused inbox subscription",
  );
  t.equal(
    (await must(api("GET", "/audit?event_type=secret.used&limit=500"), 200)).events.length,
    before,
    "secrets never saw the probe's Resolve (no secret.used)",
  );

  // Meanwhile the services keep working: a re-apply resolves the secret again through state.
  const again = await must(api("POST", "/agents/bus-1/apply?wait=30", { modules: ["bus-flow"] }), 200);
  t.equal(again.status, "succeeded");
  t.same(
    again.summary,
    { ok: 1, changed: 0, failed: 0, skipped: 0, unsupported: 0 },
    "a final apply succeeds with nothing to change",
  );
  await eventually(
    async () => (await api("GET", "/audit?event_type=secret.used&limit=500")).body.events.length > before,
    15_000,
  );
  t.equal((await must(api("GET", "/status"), 200)).status, "ok");
});

t.test("nothing the services did was a permission violation", async (t) => {
  const others = violations().filter((l) => !l.includes(PROBE));
  t.same(
    others,
    [],
    "the server refused nothing to any service (a hit names a subject missing from deploy/nats/permissions.mjs)",
  );
  const out = system.output();
  const bad = out.split("\n").filter((l) => /Permissions? Violation|bus_permission_denied|"nats":"error"/i.test(l));
  t.same(bad, [], "no service logged a bus permission error");
  t.notOk(out.includes(SECRET), "no service logged the secret value");
});

/** GET /audit/stream (Server-Sent Events) read as text until `pred` holds. */
async function openTail(query: string) {
  const ac = new AbortController();
  const res = await fetch(`${system.url}/api/v1/audit/stream?${query}`, {
    headers: { authorization: `Bearer ${token}` },
    signal: ac.signal,
  });
  if (res.status !== 200) throw new Error(`audit stream: ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  return {
    async until(pred: (s: string) => boolean, ms = 15_000) {
      const timer = setTimeout(() => ac.abort(), ms);
      try {
        while (!pred(text)) {
          const { value, done } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
      } catch {
        /* aborted: the assertion below reports what arrived */
      } finally {
        clearTimeout(timer);
      }
      return text;
    },
    close: () => ac.abort(),
  };
}
