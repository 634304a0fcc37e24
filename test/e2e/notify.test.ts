import t from "tap";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createTestDatabase, ed25519, eventually, startNats, startSystem } from "@orch/kit/testing";
import { run } from "../../cli/src/program.js";
import { startReceiver } from "../../services/notify/test/harness.js";

// The notify service as a real process: deliveries survive a SIGKILL between tries and are
// delivered exactly once; credentials are encrypted at rest and never printed; orchctl drives it.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const rx = await startReceiver();
t.teardown(() => rx.close());
const credentialsKey = Buffer.alloc(32, 5).toString("hex");
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "gateway", "notify"],
  env: {
    ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS: "true",
    ORCH_NOTIFY_RETRY_BASE_MS: "1500",
    ORCH_NOTIFY_RETRY_MAX_MS: "3000",
    ORCH_NOTIFY_POLL_MS: "100",
    ORCH_NOTIFY_LEASE_MS: "4000",
    ORCH_NOTIFY_OPERATORS_CACHE_MS: "0",
    ORCH_NOTIFY_CREDENTIALS_KEY: credentialsKey,
  },
});
const home = mkdtempSync(join(tmpdir(), "orch-notify-e2e-"));
t.teardown(() => rmSync(home, { recursive: true, force: true }));

const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, path, { token, ...(body !== undefined ? { body } : {}) });
/**
 * A real warning event from the real auth service: the first failed login of an operator in its
 * window (unknown keys and repeats notify nobody), so each call uses a fresh operator.
 */
let failures = 0;
const failLogin = async () => {
  const key = ed25519();
  await api("POST", "/api/v1/operators", { name: `failing-${++failures}`, public_key: key.publicKeyHex });
  const ch = await system.api("POST", "/api/v1/auth/challenge", { body: { public_key: key.publicKeyHex } });
  return system.api("POST", "/api/v1/auth/verify", {
    body: { public_key: key.publicKeyHex, nonce: ch.body.nonce, signature: "00".repeat(64) },
  });
};

t.test("a delivery interrupted by SIGKILL between tries is delivered exactly once after the restart", async (t) => {
  rx.respond = (_n, req) =>
    req.url === "/kill" && rx.got.filter((r) => r.url === "/kill").length < 2
      ? { status: 500, body: "not yet" }
      : { status: 200, body: "ok" };
  const ch = await api("POST", "/api/v1/channels", {
    name: "kill",
    channel_type: "webhook",
    config: { url: `${rx.url}/kill`, event_types: ["auth.login.failed"] },
  });
  t.equal(ch.status, 201);
  t.equal((await failLogin()).status, 401);

  const first = await eventually(async () => {
    const d = (await api("GET", `/api/v1/channels/${ch.body.id}/deliveries`)).body.deliveries[0];
    return d?.status === "pending" && d.attempts === 1 ? d : undefined;
  });
  t.equal(first.last_status_code, 500);
  await system.kill("notify", "SIGKILL");
  t.equal(rx.got.filter((r) => r.url === "/kill").length, 1, "one try before the kill");

  await system.start("notify");
  const done = await eventually(async () => {
    const d = (await api("GET", `/api/v1/channels/${ch.body.id}/deliveries`)).body?.deliveries?.[0];
    return d?.status === "delivered" ? d : undefined;
  }, 30_000);
  t.equal(done.attempts, 3);
  // A few more worker rounds: nothing is sent again.
  await new Promise((r) => setTimeout(r, 1000));
  const got = rx.got.filter((r) => r.url === "/kill");
  t.same(
    got.map((r) => r.status),
    [500, 500, 200],
    "failed twice, delivered once on the third try",
  );
  t.equal(new Set(got.map((r) => r.headers["webhook-id"])).size, 1, "one delivery id throughout");
  t.equal(JSON.parse(got[2]!.body).event_type, "auth.login.failed");

  const n = await api("GET", "/api/v1/notifications?unread=true");
  t.ok(
    n.body.notifications.some((x: { event_type: string }) => x.event_type === "auth.login.failed"),
    "the admin got a notification for it",
  );
});

t.test("credentials are encrypted at rest and appear in no process output", async (t) => {
  const ch = await api("POST", "/api/v1/channels", {
    name: "phone",
    channel_type: "ntfy",
    config: { server_url: rx.url, topic: "enc", token: "tk_AT_REST_123" },
  });
  t.equal(ch.status, 201);
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  t.teardown(() => c.end());
  const row = (
    await c.query("SELECT config::text AS config, credentials FROM notify.channels WHERE id = $1", [ch.body.id])
  ).rows[0];
  t.notOk(row.config.includes("tk_AT_REST_123"));
  t.notOk(Buffer.from(row.credentials).includes("tk_AT_REST_123"), "sealed under notify.credentials_keys");
  t.equal(row.credentials[0], 2, "keyring (AES-GCM with key id) format marker");
  const test = await api("POST", `/api/v1/channels/${ch.body.id}/test`);
  t.equal(test.body.delivered, true);
  t.equal(rx.got.at(-1)?.headers.authorization, "Bearer tk_AT_REST_123", "decrypted for sending");
  t.notOk(system.output().includes("tk_AT_REST_123"), "never logged");
});

async function orchctl(...args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { ORCHCTL_HOME: home, HOME: home },
  });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

t.test("orchctl channels, notifications and maintenance", async (t) => {
  const me = (await api("GET", "/api/v1/auth/whoami")).body;
  writeFileSync(
    join(home, "session.json"),
    JSON.stringify({
      server: system.url,
      token,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      operator: me,
    }),
    { mode: 0o600 },
  );

  const add = await orchctl(
    "channels",
    "add",
    "cli-ntfy",
    "--type",
    "ntfy",
    "--server-url",
    rx.url,
    "--topic",
    "cli",
    "--token",
    "tk_cli",
    "--min-severity",
    "error",
    "--json",
  );
  t.equal(add.code, 0, add.stderr);
  t.match(add.json(), {
    name: "cli-ntfy",
    channel_type: "ntfy",
    config: { topic: "cli", token: "********", min_severity: "error" },
  });
  const hook = await orchctl(
    "channels",
    "add",
    "cli-hook",
    "--type",
    "webhook",
    "--url",
    `${rx.url}/cli-hook`,
    "--header",
    "X-Team=ops",
  );
  t.equal(hook.code, 0, hook.stderr);
  t.match(hook.stdout, /webhook secret \(shown once, store it now\): whsec_/);

  const list = await orchctl("channels", "list");
  t.match(list.stdout, /^NAME\s+ID\s+TYPE\s+ENABLED\s+MIN SEVERITY\s+TARGET$/m);
  t.match(list.stdout, /cli-ntfy\s+\S+\s+ntfy\s+yes\s+error/);
  const show = await orchctl("channels", "show", "cli-hook");
  t.match(show.stdout, /type:\s+webhook/);
  t.notOk(show.stdout.includes("whsec_") && !show.stdout.includes("whsec_********"), "secret masked in show");

  const test = await orchctl("channels", "test", "cli-ntfy", "--json");
  t.same(test.json(), { delivered: true, status_code: 200, response_snippet: "ok", error: null });
  t.equal(rx.got.at(-1)?.headers.authorization, "Bearer tk_cli");
  const upd = await orchctl("channels", "update", "cli-ntfy", "--topic", "cli2", "--json");
  t.equal(upd.code, 0, upd.stderr);
  t.equal(upd.json().config.topic, "cli2");
  await orchctl("channels", "test", "cli-ntfy");
  t.equal(rx.got.at(-1)?.url, "/cli2");
  t.equal(rx.got.at(-1)?.headers.authorization, "Bearer tk_cli", "update from flags kept the masked token");

  const win = await orchctl(
    "maintenance",
    "add",
    "--reason",
    "patching",
    "--start",
    String(Math.floor(Date.now() / 1000) - 60),
    "--duration",
    "1h",
    "--json",
  );
  t.equal(win.code, 0, win.stderr);
  t.match(win.json(), { reason: "patching", active: true });
  t.equal(win.json().ends_at - win.json().starts_at, 3600);
  t.match(
    (await orchctl("maintenance", "list")).stdout,
    new RegExp(`${win.json().id}\\s+\\S+\\s+\\S+\\s+yes\\s+patching`),
  );
  const ended = await orchctl("maintenance", "end", win.json().id, "--json");
  t.equal(ended.json().active, false);
  const bad = await orchctl(
    "maintenance",
    "add",
    "--reason",
    "x",
    "--start",
    "2030-01-02T00:00:00Z",
    "--end",
    "2030-01-01T00:00:00Z",
    "--json",
  );
  t.equal(bad.code, 1);
  t.equal(bad.json().code, "invalid_window");
  t.equal((await orchctl("maintenance", "rm", win.json().id)).code, 0);
  t.equal((await orchctl("maintenance", "show", win.json().id)).code, 1);

  await api("POST", "/api/v1/notifications/read-all");
  await failLogin();
  await failLogin();
  const unread = await eventually(async () => {
    const r = await orchctl("notifications", "--unread", "--json");
    // The list and the unread count are two reads: wait until both have seen the second event.
    const body = r.json();
    return body.unread_count === 2 && body.notifications.length === 2 ? body : undefined;
  });
  t.same(
    unread.notifications.map((n: { event_type: string }) => n.event_type),
    ["auth.login.failed", "auth.login.failed"],
  );
  const one = await orchctl("notifications", "read", unread.notifications[0].id, "--json");
  t.equal(one.json().notification.read, true);
  t.equal(one.json().unread_count, 1);
  const all = await orchctl("notifications", "read-all");
  t.match(all.stdout, /^Marked 1 notification read$/m);
  t.equal((await orchctl("notifications", "--unread", "--json")).json().unread_count, 0);
  const human = await orchctl("notifications", "--limit", "5");
  t.match(human.stdout, /^\s+ID\s+TIME\s+SEVERITY\s+TYPE\s+SUMMARY$/m);
  t.match(human.stderr, /0 unread/);
  const tooMany = await orchctl("notifications", "--limit", "500", "--json");
  t.equal(tooMany.code, 1);
  t.equal(tooMany.json().code, "invalid_request");

  const rm = await orchctl("channels", "rm", "cli-ntfy", "--json");
  t.equal(rm.json().removed, true);
  t.equal((await orchctl("channels", "show", "cli-ntfy")).code, 1);
});
