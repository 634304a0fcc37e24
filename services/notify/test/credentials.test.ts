// Channel credentials are always encrypted (docs/notify.md): the built service refuses to start
// without a key, rows hold ciphertext, clear rows from before are sealed at start, and the keyring
// rotates (a channel created under key A still delivers once the keyring is [B, A]).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import t from "tap";
import { NotifyService } from "@orch/contracts";
import { type OrchError, rpcClient } from "@orch/kit";
import { createTestDatabase, memoryLogger, startNats } from "@orch/kit/testing";
import { FAST, startNotify, startReceiver } from "./harness.js";

const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url));
const keyA = `a:${Buffer.alloc(32, 0xa).toString("base64")}`;
const keyB = `b:${Buffer.alloc(32, 0xb).toString("base64")}`;
const admin = { actor: { id: "01ADMIN", name: "root", type: "operator", role: "admin" } };
const TOKEN = "tk_AT_REST_secret_123";
const HEADER = "hdr-AT-REST-value";

function startBuilt(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const base = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("ORCH_NOTIFY_CREDENTIALS")),
    );
    // Unreachable NATS and Postgres: reaching them would hang, so an exit proves nothing was tried.
    const env2 = {
      ...base,
      NODE_ENV: "production",
      NATS_URL: "nats://127.0.0.1:1",
      DATABASE_URL: "postgres://nobody@127.0.0.1:1/x",
      ...env,
    };
    const p = spawn(process.execPath, [MAIN], { env: env2, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    p.stderr.on("data", (d) => (stderr += d));
    p.on("close", (code) => resolve({ code, stderr }));
  });
}

t.test("the built service refuses to start without a credentials key, naming the setting", async (t) => {
  t.ok(existsSync(MAIN), "run `npx tsc -p services/notify` first");
  const none = await startBuilt({});
  t.equal(none.code, 2);
  t.match(none.stderr, /notify\.credentials_keys: no encryption key configured: set ORCH_NOTIFY_CREDENTIALS_KEYS/);
  const bad = await startBuilt({ ORCH_NOTIFY_CREDENTIALS_KEYS: "k1:dG9vLXNob3J0LWtleQ==" });
  t.equal(bad.code, 2);
  t.match(bad.stderr, /key 'k1': the key must be 32 bytes/);
  t.notOk(bad.stderr.includes("dG9vLXNob3J0LWtleQ"), "the key is never printed");
});

t.test("ciphertext at rest, clear rows sealed at start, rotation to [B, A]", async (t) => {
  const nats = await startNats();
  const db = await createTestDatabase();
  const rx = await startReceiver();
  t.teardown(async () => {
    await rx.close();
    await db.drop();
    await nats.stop();
  });
  const nc = await nats.connect("t");
  const client = rpcClient(nc, "notify", NotifyService, { timeoutMs: 10_000 });

  // 1. Key A: a webhook with a secret header; the row holds no credential in clear.
  let notify = await startNotify(nats, db, { ...FAST, credentials_keys: keyA });
  t.teardown(() => notify.stop());
  const ch = await client.createChannel(
    { name: "hook", channelType: "webhook", config: { url: `${rx.url}/hook`, headers: { "X-Api-Key": HEADER } } },
    admin,
  );
  const rowOf = async (id: string) =>
    (await notify.deps.pool.query<{ credentials: Buffer }>("SELECT credentials FROM channels WHERE id = $1", [id]))
      .rows[0]!.credentials;
  let row = await rowOf(ch.id);
  t.notOk(row.includes(HEADER), "the header value is not in the row");
  t.equal(row[0], 2, "keyring format");
  t.equal(row.subarray(2, 2 + row[1]!).toString(), "a", "sealed with key a");

  // 2. A clear row as stored before encryption was mandatory (format byte 0 + JSON).
  await notify.deps.pool.query(
    `INSERT INTO channels (id, name, channel_type, config, credentials, enabled, disabled_reason, created_at, created_by, updated_at)
     VALUES ('01OLDCLEAR', 'old-ntfy', 'ntfy', $1, $2, true, '', 1, 'x', 1)`,
    [
      JSON.stringify({ topic: "alerts", server_url: rx.url }),
      Buffer.concat([Buffer.from([0]), Buffer.from(JSON.stringify({ token: TOKEN }))]),
    ],
  );
  await notify.stop();

  // 3. Restart with the keyring [B, A]: every row is re-sealed with B at start.
  const logs = memoryLogger("notify", "info");
  notify = await startNotify(nats, db, { ...FAST, credentials_keys: `${keyB},${keyA}` }, { log: logs.log });
  for (const id of [ch.id, "01OLDCLEAR"]) {
    row = await rowOf(id);
    t.equal(row[0], 2, `${id}: keyring format`);
    t.equal(row.subarray(2, 2 + row[1]!).toString(), "b", `${id}: re-sealed with the active key b`);
    t.notOk(row.includes(TOKEN) || row.includes(HEADER), `${id}: no credential in clear`);
  }
  t.ok(
    logs.lines.some((l) => l.includes("re-sealed with the active key")),
    "the re-seal is logged",
  );
  t.notOk(
    logs.lines.some((l) => l.includes(TOKEN) || l.includes(HEADER)),
    "no credential in the logs",
  );

  // 4. The channel created under A still works: its credentials reach the receiver.
  const sent = await client.testChannel({ id: ch.id }, admin);
  t.equal(sent.delivered, true, sent.error);
  t.equal(rx.got.at(-1)?.headers["x-api-key"], HEADER, "the header sealed under key a was sent");
  const old = await client.testChannel({ id: "01OLDCLEAR" }, admin);
  t.equal(old.delivered, true, old.error);
  t.equal(rx.got.at(-1)?.headers.authorization, `Bearer ${TOKEN}`, "the formerly clear ntfy token was sent");
});

t.test("a row sealed with a key that left the keyring is reported, not lost, and not sent", async (t) => {
  const nats = await startNats();
  const db = await createTestDatabase();
  t.teardown(async () => {
    await db.drop();
    await nats.stop();
  });
  const nc = await nats.connect("t");
  const client = rpcClient(nc, "notify", NotifyService, { timeoutMs: 10_000 });
  let notify = await startNotify(nats, db, { ...FAST, credentials_keys: keyA });
  t.teardown(() => notify.stop());
  const ch = await client.createChannel(
    { name: "n", channelType: "ntfy", config: { topic: "x", server_url: "http://127.0.0.1:1", token: TOKEN } },
    admin,
  );
  await notify.stop();
  const logs = memoryLogger("notify", "info");
  notify = await startNotify(nats, db, { ...FAST, credentials_keys: keyB }, { log: logs.log });
  t.ok(
    logs.lines.some((l) => l.includes("not in notify.credentials_keys") && l.includes(ch.id)),
    "the unreadable channel is named",
  );
  // The test endpoint cannot send without the credentials: 409 naming the key, nothing in clear.
  const r = await client.testChannel({ id: ch.id }, admin).then(
    () => undefined,
    (e: unknown) => e as OrchError,
  );
  t.equal(r?.code, "FAILED_PRECONDITION");
  t.equal(r?.reason, "channel_credentials_unavailable");
  t.match(r?.message, /key 'a' is not in the keyring/);
  t.notOk(JSON.stringify({ m: r?.message, d: r?.details }).includes(TOKEN));
});
