import t from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, NotifyService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, startNats } from "@orch/kit/testing";
import { send } from "../src/delivery/http.js";
import { systemResolver, TargetRefused, type Resolver } from "../src/delivery/ssrf.js";
import { FAST, publishEvent, startNotify, startReceiver } from "./harness.js";

// Outgoing requests are checked at send time against the address policy, pinned to the checked
// address, never follow redirects, and time out. Real sockets, real receivers on 127.0.0.1.
const receiver = await startReceiver();
const other = await startReceiver();
t.teardown(async () => {
  await receiver.close();
  await other.close();
});

const post = (url: string) => ({
  url,
  method: "POST" as const,
  headers: { "content-type": "application/json" },
  body: "{}",
});
const strict = { allowPrivate: false, timeoutMs: 2000, resolver: systemResolver };

t.test("loopback, metadata and private targets are refused by name and by literal address", async (t) => {
  const fake: Resolver = async (h) =>
    h === "metadata.test"
      ? [{ address: "169.254.169.254", family: 4 }]
      : h === "mixed.test"
        ? [
            { address: "93.184.216.34", family: 4 },
            { address: "10.0.0.5", family: 4 },
          ]
        : systemResolver(h);
  const cases: Array<[string, RegExp]> = [
    [`http://127.0.0.1:${receiver.port}/hook`, /127\.0\.0\.1 \(loopback\)/],
    [`http://localhost:${receiver.port}/hook`, /\((loopback)\)/],
    [`http://[::1]:${receiver.port}/hook`, /::1 \(loopback\)/],
    ["http://169.254.169.254/latest/meta-data/", /169\.254\.169\.254 \(metadata\)/],
    ["http://metadata.test/latest/meta-data/", /169\.254\.169\.254 \(metadata\)/],
    ["http://mixed.test/hook", /10\.0\.0\.5 \(private\)/],
    ["http://100.64.1.1/hook", /cgnat/],
    ["http://0.0.0.0:1/hook", /unspecified/],
  ];
  for (const [url, re] of cases) {
    const err = await send(post(url), { ...strict, resolver: fake }).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof TargetRefused, `${url} refused`);
    t.match((err as Error).message, re);
  }
  t.equal(receiver.got.length, 0, "nothing reached the receiver");
});

t.test("with private targets allowed the same request goes through", async (t) => {
  const before = receiver.got.length;
  const ans = await send(post(`http://localhost:${receiver.port}/hook`), { ...strict, allowPrivate: true });
  t.equal(ans.status, 200);
  t.equal(receiver.got.length, before + 1);
});

t.test("the checked address is pinned: the name is resolved once, a rebinding answer is never used", async (t) => {
  let lookups = 0;
  const rebinding: Resolver = async () =>
    lookups++ === 0 ? [{ address: "127.0.0.1", family: 4 }] : [{ address: "10.255.255.1", family: 4 }];
  const before = receiver.got.length;
  const ans = await send(post(`http://rebind.test:${receiver.port}/pinned`), {
    allowPrivate: true,
    timeoutMs: 2000,
    resolver: rebinding,
  });
  t.equal(ans.status, 200, "connected to the checked address (10.255.255.1 would not answer)");
  t.equal(lookups, 1, "one lookup");
  t.equal(receiver.got[before]?.headers.host, `rebind.test:${receiver.port}`, "Host header keeps the name");
});

t.test("redirects are answers, not followed", async (t) => {
  receiver.respond = () => ({ status: 302, headers: { location: `${other.url}/elsewhere` } });
  t.teardown(() => void (receiver.respond = () => ({ status: 200, body: "ok" })));
  const ans = await send(post(`${receiver.url}/hook`), { ...strict, allowPrivate: true });
  t.equal(ans.status, 302);
  t.equal(other.got.length, 0, "the redirect target was never contacted");
});

t.test("a receiver that never answers hits the timeout", async (t) => {
  const { createServer } = await import("node:net");
  const sockets: import("node:net").Socket[] = [];
  const silent = createServer((s) => void sockets.push(s));
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        silent.close(() => r());
      }),
  );
  const port = (silent.address() as { port: number }).port;
  await t.rejects(
    send(post(`http://127.0.0.1:${port}/`), { allowPrivate: true, timeoutMs: 300, resolver: systemResolver }),
    /no answer within 300 ms/,
  );
});

t.test(
  "through the service: a refused delivery fails at once with channel.delivery.failed, and the test endpoint reports it",
  async (t) => {
    const nats = await startNats();
    const db = await createTestDatabase();
    // Notifications only for critical events, so this file needs no auth service.
    const notify = await startNotify(nats, db, { ...FAST, allow_private_targets: false, min_severity: "critical" });
    t.teardown(async () => {
      await notify.stop();
      await db.drop();
      await nats.stop();
    });
    const nc = await nats.connect("t");
    const admin = { actor: { id: "01ADMIN", name: "root", type: "operator", role: "admin" } };
    const client = rpcClient(nc, "notify", NotifyService, { timeoutMs: 10_000 });
    const failedEvents: string[] = [];
    nc.subscribe("audit.channel.delivery.failed", {
      callback: (_e, m) => void failedEvents.push(fromBinary(AuditEventSchema, m.data).summary),
    });

    const before = receiver.got.length;
    const local = await client.createChannel(
      { name: "local", channelType: "webhook", config: { url: `http://localhost:${receiver.port}/hook` } },
      admin,
    );
    const meta = await client.createChannel(
      { name: "meta", channelType: "webhook", config: { url: "http://169.254.169.254/latest/meta-data/" } },
      admin,
    );
    await publishEvent(nc, { type: "drift.detected", summary: "web-1 drifted" });

    for (const ch of [local, meta]) {
      const d = await eventually(async () =>
        (await client.listDeliveries({ channelId: ch.id }, admin)).deliveries.find((x) => x.status === "failed"),
      );
      t.equal(d.attempts, 1, `${ch.name}: no retries for a refused target`);
      t.match(
        d.lastError,
        /refused because notify\.allow_private_targets \(ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS\) is off/,
      );
    }
    await eventually(() => failedEvents.length >= 2);
    t.match(failedEvents.join("\n"), /through channel local failed/);

    const test = await client.testChannel({ id: "meta" }, admin);
    t.equal(test.delivered, false);
    t.equal(test.statusCode, 0);
    t.match(test.error, /169\.254\.169\.254 \(metadata\)/);
    t.equal(receiver.got.length, before, "the receiver was never contacted");
  },
);

t.test(
  "through the service: IPv6 transition forms of loopback/private space and documentation ranges are refused",
  async (t) => {
    const nats = await startNats();
    const db = await createTestDatabase();
    const notify = await startNotify(nats, db, { ...FAST, allow_private_targets: false, min_severity: "critical" });
    t.teardown(async () => {
      await notify.stop();
      await db.drop();
      await nats.stop();
    });
    const nc = await nats.connect("t");
    const admin = { actor: { id: "01ADMIN", name: "root", type: "operator", role: "admin" } };
    const client = rpcClient(nc, "notify", NotifyService, { timeoutMs: 10_000 });
    const cases: Array<[string, RegExp]> = [
      ["[::127.0.0.1]", /\(loopback\)/],
      ["[::7f00:1]", /\(loopback\)/],
      ["[::ffff:0:7f00:1]", /\(loopback\)/],
      ["[2002:7f00:1::]", /\(loopback\)/],
      ["[64:ff9b:1::7f00:1]", /\(loopback\)/],
      ["[64:ff9b:1::808:808]", /\(reserved\)/],
      ["[fec0::1]", /\(site_local\)/],
      ["[2001:db8::1]", /\(documentation\)/],
      ["192.0.2.1", /\(documentation\)/],
      ["198.51.100.1", /\(documentation\)/],
      ["203.0.113.1", /\(documentation\)/],
    ];
    const before = receiver.got.length;
    for (const [i, [host, re]] of cases.entries()) {
      const ch = await client.createChannel(
        { name: `v6-${i}`, channelType: "webhook", config: { url: `http://${host}:${receiver.port}/hook` } },
        admin,
      );
      const r = await client.testChannel({ id: ch.id }, admin);
      t.equal(r.delivered, false, `${host}: not delivered`);
      t.match(
        r.error,
        /refused because notify\.allow_private_targets \(ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS\) is off/,
        `${host}: refused by policy`,
      );
      t.match(r.error, re, `${host}: reason`);
    }
    t.equal(receiver.got.length, before, "the receiver was never contacted");
  },
);
