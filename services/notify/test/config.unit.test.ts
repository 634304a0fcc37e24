import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { MASK, channelWants, matchesType, prepareCreate, prepareUpdate, viewConfig } from "../src/channels/config.js";
import { credentialBox, credentialsKeyring } from "../src/channels/crypto.js";
import { notifyConfigSchema } from "../src/config.js";
import { nextAttemptAt, parseRetryAfter, retryDelay } from "../src/delivery/backoff.js";
import { blockedReason } from "../src/delivery/ssrf.js";

const reject = (t: Test, fn: () => unknown, reason: string, field?: string) => {
  try {
    fn();
    t.fail(`expected ${reason}`);
  } catch (err) {
    t.ok(err instanceof OrchError, "an OrchError");
    const e = err as OrchError;
    t.equal(e.code, "INVALID_ARGUMENT");
    t.equal(e.reason, reason);
    if (field) t.equal(e.details.field, field, `names ${field}`);
  }
};

t.test("config is validated per type and the error names the field", async (t) => {
  reject(t, () => prepareCreate("webhook", {}), "invalid_config", "config.url");
  reject(t, () => prepareCreate("webhook", { url: "ftp://x.example" }), "invalid_config", "config.url");
  reject(t, () => prepareCreate("webhook", { url: "https://u:p@x.example/h" }), "invalid_config", "config.url");
  reject(
    t,
    () => prepareCreate("webhook", { url: "https://x.example", secret: "nope" }),
    "invalid_config",
    "config.secret",
  );
  reject(
    t,
    () => prepareCreate("webhook", { url: "https://x.example", headers: { "Content-Type": "text/plain" } }),
    "invalid_config",
    "config.headers.Content-Type",
  );
  reject(
    t,
    () => prepareCreate("webhook", { url: "https://x.example", headers: { "X-A": "a\nb" } }),
    "invalid_config",
    "config.headers.X-A",
  );
  reject(
    t,
    () => prepareCreate("discord", { url: "https://discord.com/api/webhooks/1/x" }),
    "invalid_config",
    "config.webhook_url",
  );
  reject(
    t,
    () => prepareCreate("slack", { webhook_url: "https://hooks.slack.com/services/T/B/X", colour: "red" }),
    "invalid_config",
    "config.colour",
  );
  reject(t, () => prepareCreate("ntfy", { topic: "has space" }), "invalid_config", "config.topic");
  reject(t, () => prepareCreate("ntfy", { topic: "alerts", priority: 6 }), "invalid_config", "config.priority");
  reject(
    t,
    () => prepareCreate("ntfy", { topic: "alerts", min_severity: "loud" }),
    "invalid_config",
    "config.min_severity",
  );
  reject(
    t,
    () => prepareCreate("ntfy", { topic: "alerts", event_types: ["Agent!"] }),
    "invalid_config",
    "config.event_types.0",
  );
});

t.test("credentials are split out, masked in views, and a webhook secret is generated once", async (t) => {
  const w = prepareCreate("webhook", {
    url: "https://x.example/hook",
    headers: { "X-Api-Key": "k1" },
    min_severity: "error",
  });
  t.same(w.public, { url: "https://x.example/hook", min_severity: "error" });
  t.match(w.generatedSecret, /^whsec_[A-Za-z0-9+/]+=*$/);
  t.equal(Buffer.from(w.generatedSecret!.slice(6), "base64").length, 32);
  t.same(w.credentials, { headers: { "X-Api-Key": "k1" }, secret: w.generatedSecret });
  t.same(
    viewConfig("webhook", w.public, w.credentials, w.generatedSecret),
    { url: "https://x.example/hook", min_severity: "error", headers: { "X-Api-Key": MASK }, secret: w.generatedSecret },
    "create view shows the generated secret",
  );
  t.same(
    viewConfig("webhook", w.public, w.credentials),
    { url: "https://x.example/hook", min_severity: "error", headers: { "X-Api-Key": MASK }, secret: `whsec_${MASK}` },
    "later views mask it",
  );

  const d = prepareCreate("discord", { webhook_url: "https://discord.com/api/webhooks/123/tok-en" });
  t.same(viewConfig("discord", d.public, d.credentials), { webhook_url: `https://discord.com/${MASK}` });
  const n = prepareCreate("ntfy", { topic: "alerts", token: "tk_secret" });
  t.same(viewConfig("ntfy", n.public, n.credentials), { topic: "alerts", server_url: "https://ntfy.sh", token: MASK });
  t.notOk(JSON.stringify(viewConfig("ntfy", n.public, n.credentials)).includes("tk_secret"));
});

t.test("an update keeps credentials sent back masked or omitted; null removes or rotates", async (t) => {
  const stored = { webhook_url: "https://discord.com/api/webhooks/123/tok-en" };
  t.same(
    prepareUpdate("discord", { webhook_url: `https://discord.com/${MASK}`, min_severity: "info" }, stored).credentials,
    stored,
    "masked form keeps it",
  );
  t.same(prepareUpdate("discord", { min_severity: "info" }, stored).credentials, stored, "omitted keeps it");
  t.same(
    prepareUpdate("discord", { webhook_url: "https://discord.com/api/webhooks/9/new" }, stored).credentials,
    { webhook_url: "https://discord.com/api/webhooks/9/new" },
    "a new value replaces it",
  );
  reject(t, () => prepareUpdate("discord", { webhook_url: null }, stored), "invalid_config", "config.webhook_url");

  const ntfy = { token: "tk_1" };
  t.same(prepareUpdate("ntfy", { topic: "a", token: MASK }, ntfy).credentials, ntfy);
  t.same(
    prepareUpdate("ntfy", { topic: "a", token: null }, ntfy).credentials,
    {},
    "null removes an optional credential",
  );
  reject(t, () => prepareUpdate("ntfy", { topic: "a", token: MASK }, {}), "invalid_config", "config.token");

  const hook = {
    secret: `whsec_${Buffer.alloc(32, 1).toString("base64")}`,
    headers: { "X-Api-Key": "k1", "X-Other": "o" },
  };
  const kept = prepareUpdate(
    "webhook",
    { url: "https://x.example", secret: `whsec_${MASK}`, headers: { "X-Api-Key": MASK, "X-New": "n" } },
    hook,
  );
  t.same(
    kept.credentials,
    { secret: hook.secret, headers: { "X-Api-Key": "k1", "X-New": "n" } },
    "masked header values keep theirs; the map is replaced",
  );
  t.equal(kept.generatedSecret, undefined);
  const rotated = prepareUpdate("webhook", { url: "https://x.example", secret: null }, hook);
  t.not(rotated.credentials.secret, hook.secret);
  t.equal(rotated.generatedSecret, rotated.credentials.secret, "secret: null rotates and shows the new one");
});

t.test("channel filters: severity threshold and dot-boundary prefixes", async (t) => {
  t.ok(channelWants({}, "drift.detected", "warning"), "default threshold is warning");
  t.notOk(channelWants({}, "agent.connected", "info"));
  t.ok(channelWants({ min_severity: "info" }, "agent.connected", "info"));
  t.notOk(channelWants({ min_severity: "error" }, "drift.detected", "warning"));
  t.ok(matchesType("agent.tags.updated", ["agent"]));
  t.ok(matchesType("agent.tags.updated", ["agent.tags"]));
  t.ok(matchesType("drift.detected", ["drift.detected"]));
  t.notOk(matchesType("agents.x", ["agent"]));
  t.notOk(channelWants({ event_types: ["state"] }, "drift.detected", "critical"));
});

t.test("backoff grows exponentially with jitter, is capped, and honours Retry-After", async (t) => {
  t.equal(
    retryDelay(1, 1000, 60_000, () => 0),
    500,
  );
  t.equal(
    retryDelay(1, 1000, 60_000, () => 1),
    1000,
  );
  t.equal(
    retryDelay(4, 1000, 60_000, () => 1),
    8000,
  );
  t.equal(
    retryDelay(30, 1000, 60_000, () => 1),
    60_000,
    "capped",
  );
  const now = Date.parse("2025-01-01T00:00:00Z");
  t.equal(parseRetryAfter("120", now), 120_000);
  t.equal(parseRetryAfter("Wed, 01 Jan 2025 00:00:30 GMT", now), 30_000);
  t.equal(parseRetryAfter("soon", now), undefined);
  t.equal(
    nextAttemptAt(now, 1, 30_000, 1000, 60_000, () => 1),
    now + 30_000,
    "Retry-After beyond the backoff wins",
  );
  t.equal(
    nextAttemptAt(now, 1, 7_200_000, 1000, 60_000, () => 1),
    now + 60_000,
    "but is bounded by retry_max_ms",
  );
});

t.test(
  "address policy refuses loopback, private, link-local, metadata, CGNAT, unspecified, IPv6 transition forms and documentation ranges",
  async (t) => {
    const cases: Array<[string, string | undefined]> = [
      ["127.0.0.1", "loopback"],
      ["127.9.9.9", "loopback"],
      ["10.1.2.3", "private"],
      ["172.16.0.1", "private"],
      ["172.31.255.255", "private"],
      ["172.32.0.1", undefined],
      ["192.168.1.1", "private"],
      ["169.254.169.254", "metadata"],
      ["169.254.1.1", "link_local"],
      ["100.64.0.1", "cgnat"],
      ["100.127.255.255", "cgnat"],
      ["0.0.0.0", "unspecified"],
      ["0.1.2.3", "unspecified"],
      ["::1", "loopback"],
      ["::", "unspecified"],
      ["fd12:3456::1", "private"],
      ["fe80::1", "link_local"],
      ["::ffff:127.0.0.1", "loopback"],
      ["::ffff:a9fe:a9fe", "metadata"],
      ["8.8.8.8", undefined],
      ["2606:4700:4700::1111", undefined],
      // IPv6 forms of loopback and private space, and the documentation ranges.
      ["::127.0.0.1", "loopback"],
      ["::7f00:1", "loopback"],
      ["::ffff:0:7f00:1", "loopback"],
      ["2002:7f00:1::", "loopback"],
      ["64:ff9b:1::7f00:1", "loopback"],
      ["64:ff9b:1::808:808", "reserved"],
      ["fec0::1", "site_local"],
      ["2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"],
      ["192.0.2.1", "documentation"],
      ["198.51.100.1", "documentation"],
      ["203.0.113.1", "documentation"],
      ["2001:db8::1", "documentation"],
    ];
    for (const [addr, want] of cases) t.equal(blockedReason(addr), want, `${addr} → ${want ?? "allowed"}`);
  },
);

t.test("credentials are sealed under the keyring, bound to the channel id, and rotate", async (t) => {
  const kA = `a:${Buffer.alloc(32, 7).toString("base64")}`;
  const kB = `b:${Buffer.alloc(32, 8).toString("base64")}`;
  const boxA = credentialBox(credentialsKeyring(kA));
  const blob = boxA.seal("CH1", { token: "tk_secret" });
  t.notOk(blob.toString("latin1").includes("tk_secret"), "not stored in clear");
  t.ok(boxA.current(blob), "sealed with the active key");
  t.same(boxA.open("CH1", blob), { token: "tk_secret" });
  t.throws(() => boxA.open("CH2", blob), "bound to its channel");
  const boxBA = credentialBox(credentialsKeyring(`${kB},${kA}`));
  t.same(boxBA.open("CH1", blob), { token: "tk_secret" }, "an older key in the ring still opens it");
  t.notOk(boxBA.current(blob), "but it is not current: re-sealed at start");
  const blobB = boxBA.seal("CH1", { token: "tk_secret" });
  t.ok(boxBA.current(blobB));
  t.throws(() => boxA.open("CH1", blobB), /not in the keyring/, "a key that is not in the ring cannot open it");
  t.throws(
    () => credentialBox(credentialsKeyring(`a:${Buffer.alloc(32, 9).toString("base64")}`)).open("CH1", blob),
    /authentication failed/,
  );
});

t.test("older formats are read (to be re-sealed): clear rows and the single legacy key", async (t) => {
  const legacyHex = Buffer.alloc(32, 3).toString("hex");
  const box = credentialBox(credentialsKeyring(`a:${Buffer.alloc(32, 7).toString("base64")}`, legacyHex), legacyHex);
  const plain = Buffer.concat([Buffer.from([0]), Buffer.from(JSON.stringify({ token: "x" }))]);
  t.same(box.open("CH1", plain), { token: "x" });
  t.notOk(box.current(plain));
  // The old format 1: [1][iv 12][tag 16][ciphertext], AES-256-GCM with the channel id as AAD.
  const { createCipheriv } = await import("node:crypto");
  const iv = Buffer.alloc(12, 1);
  const c = createCipheriv("aes-256-gcm", Buffer.from(legacyHex, "hex"), iv);
  c.setAAD(Buffer.from("CH1"));
  const ct = Buffer.concat([c.update(JSON.stringify({ token: "old" })), c.final()]);
  const old = Buffer.concat([Buffer.from([1]), iv, c.getAuthTag(), ct]);
  t.same(box.open("CH1", old), { token: "old" });
  t.throws(
    () => credentialBox(credentialsKeyring(`a:${Buffer.alloc(32, 7).toString("base64")}`)).open("CH1", old),
    /legacy/,
    "without the legacy key it cannot be read",
  );
});

t.test("no key, a bad key: the config is refused naming the setting, never echoing the key", async (t) => {
  const noKey = notifyConfigSchema.safeParse({});
  t.notOk(noKey.success);
  t.match(noKey.error?.issues[0]?.message, /no encryption key configured: set ORCH_NOTIFY_CREDENTIALS_KEYS/);
  const bad = notifyConfigSchema.safeParse({ notify: { credentials_keys: "a:dG9vLXNob3J0" } });
  t.notOk(bad.success);
  t.match(bad.error?.issues[0]?.message, /key 'a': the key must be 32 bytes/);
  t.notOk(JSON.stringify(bad.error?.issues).includes("dG9vLXNob3J0"));
  t.throws(() => credentialsKeyring("", "short"), /32 bytes/);
  t.ok(
    notifyConfigSchema.safeParse({ notify: { credentials_key: Buffer.alloc(32, 1).toString("base64") } }).success,
    "the deprecated single key alone still works",
  );
});
