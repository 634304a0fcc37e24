import { AckPolicy, jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { AUDIT_STREAM, ensureAuditStream } from "@orch/kit";
import { eventually, memoryLogger, startNats, startNatsCluster } from "@orch/kit/testing";
import t from "tap";

// A real 3-node JetStream cluster, private to this file.
const cluster = await startNatsCluster();
t.teardown(() => cluster.stop());
const nc = await cluster.connect("cluster-test");
const jsm = await jetstreamManager(nc, { timeout: 5000 });
const names = cluster.nodes.map((n) => n.name);

t.test("three nodes form one cluster with a JetStream meta leader", async (t) => {
  t.equal(cluster.urls.length, 3);
  t.equal(cluster.url, cluster.urls.join(","));
  for (const n of cluster.nodes) {
    const monitor = async <T>(path: string) =>
      (await (await fetch(`http://127.0.0.1:${n.monitorPort}${path}`)).json()) as T;
    t.equal((await monitor<{ server_name: string }>("/varz")).server_name, n.name);
    const jsz = await monitor<{ meta_cluster: { leader: string; cluster_size: number } }>("/jsz");
    t.equal(jsz.meta_cluster.cluster_size, 3, `${n.name} sees 3 peers`);
    t.ok(names.includes(jsz.meta_cluster.leader), `${n.name} knows the meta leader`);
  }
});

t.test("ensureAuditStream scales an existing R1 AUDIT stream to the configured R3, once", async (t) => {
  await jsm.streams.add({ name: AUDIT_STREAM, subjects: ["audit.>"], storage: StorageType.File, num_replicas: 1 });
  t.teardown(() => jsm.streams.delete(AUDIT_STREAM).catch(() => {}));
  const { log, lines } = memoryLogger();
  await ensureAuditStream(nc, { replicas: 3, maxAgeDays: 1, log });
  const info = await jsm.streams.info(AUDIT_STREAM);
  t.equal(info.config.num_replicas, 3);
  t.equal(lines.filter((l) => l.includes("audit stream replicas updated")).length, 1);
  await ensureAuditStream(nc, { replicas: 3, maxAgeDays: 1, log });
  t.equal(lines.filter((l) => l.includes("audit stream replicas updated")).length, 1, "a second call changes nothing");
});

t.test("with audit_stream_replicas 3 the AUDIT stream and its durable consumers have 3 replicas", async (t) => {
  await ensureAuditStream(nc, { replicas: 3, maxAgeDays: 1 });
  t.teardown(() => jsm.streams.delete(AUDIT_STREAM).catch(() => {}));
  const info = await jsm.streams.info(AUDIT_STREAM);
  t.equal(info.config.num_replicas, 3);
  const leader = info.cluster?.leader ?? "";
  const peers = (info.cluster?.replicas ?? []).map((p) => p.name);
  t.ok(names.includes(leader));
  t.same([leader, ...peers].sort(), names, "one replica on every node");

  // Durables are added as the kit's consumer does it, without num_replicas: they inherit the stream's.
  await jsm.consumers.add(AUDIT_STREAM, { durable_name: "inherits", ack_policy: AckPolicy.Explicit });
  const ci = await eventually(async () => {
    const c = await jsm.consumers.info(AUDIT_STREAM, "inherits");
    return c.cluster?.leader ? c : undefined;
  });
  t.equal(ci.config.num_replicas ?? 0, 0, "no explicit count: the stream's applies");
  t.equal((ci.cluster?.replicas ?? []).length, 2, "the consumer's state is on 3 nodes");
});

t.test("on a single server (audit_stream_replicas 1) the AUDIT stream is R1", async (t) => {
  const single = await startNats();
  t.teardown(() => single.stop());
  const snc = await single.connect("single-test");
  const sjsm = await jetstreamManager(snc);
  await ensureAuditStream(snc, { replicas: 1, maxAgeDays: 1 });
  const info = await sjsm.streams.info(AUDIT_STREAM);
  t.equal(info.config.num_replicas, 1);
  t.equal((info.cluster?.replicas ?? []).length, 0);
});

t.test("an R3 stream keeps every acked publish through a SIGKILL of its leader", async (t) => {
  const stream = "SURVIVE";
  await jsm.streams.add({ name: stream, subjects: ["survive.>"], storage: StorageType.File, num_replicas: 3 });
  t.teardown(() => jsm.streams.delete(stream).catch(() => {}));
  const js = jetstream(nc, { timeout: 2000 });
  const acked = new Set<number>();
  const publish = async (i: number) => {
    try {
      await js.publish(`survive.${i}`, new TextEncoder().encode(String(i)), { msgID: `m-${i}` });
      acked.add(i);
    } catch {
      // Not acked (no leader for a moment): the client would retry; it must not count as written.
    }
  };
  for (let i = 0; i < 200; i += 20) await Promise.all(Array.from({ length: 20 }, (_, k) => publish(i + k)));
  t.equal(acked.size, 200, "all acked before the fault");

  const leader = await cluster.waitForLeader(stream, 10_000);
  // Keep publishing while the leader dies, so acks near the kill are checked too.
  let i = 200;
  let publishing = true;
  const writer = (async () => {
    while (publishing && i < 2000) await publish(i++);
  })();
  await new Promise((r) => setTimeout(r, 100));
  await cluster.node(leader).kill("SIGKILL");
  const next = await cluster.waitForLeader(stream, 30_000, { except: leader });
  publishing = false;
  await writer;
  t.not(next, leader);
  t.ok(acked.size > 200, `acked ${acked.size} in all`);

  const seen = new Set<number>();
  for (let seq = 1; ; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (!m) break;
    seen.add(Number(new TextDecoder().decode(m.data)));
  }
  const lost = [...acked].filter((n) => !seen.has(n));
  t.same(lost, [], "no acked publish is missing on the new leader");

  // The killed node rejoins from its store and catches up.
  await cluster.node(leader).start();
  await eventually(
    async () => {
      const c = (await jsm.streams.info(stream)).cluster;
      const members = [c?.leader, ...(c?.replicas ?? []).filter((p) => p.current && !p.offline).map((p) => p.name)];
      return members.length === 3;
    },
    30_000,
    250,
  );
});
