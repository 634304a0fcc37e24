import { createSocket, type Socket } from "node:dgram";
import t, { type Test } from "tap";
import { OrchError, type Actor } from "@orch/kit";
import { createTestDatabase, eventually, startNats } from "@orch/kit/testing";
import { ADMIN, agentsClient, collectEvents, startAgentsService } from "./harness.js";

// Discover through the real agents service with real datagrams on loopback (docs/agents.md#discovery):
// the test configures 127.0.0.0/8 as the discovery network and a free port as the discovery port.
// Nothing here sends outside 127.0.0.0/8 (refused targets are refused before anything is sent);
// discover-netns.test.ts covers an admin's unicast outside the networks inside a private namespace.
const OPERATOR: Actor = { id: "01OPERATOR", name: "olivia", type: "operator", role: "operator" };

async function listen(): Promise<{ sock: Socket; port: number; got: string[] }> {
  const sock = createSocket("udp4");
  const got: string[] = [];
  sock.on("message", (m) => void got.push(m.toString()));
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", r));
  return { sock, port: sock.address().port, got };
}

async function refused(t: Test, p: Promise<unknown>, code: string, reason: string) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof OrchError, `rejected (${reason})`);
  t.equal((err as OrchError).code, code);
  t.equal((err as OrchError).reason, reason);
  t.equal((err as OrchError).details.field, "target");
}

const nats = await startNats();
const db = await createTestDatabase();
const rx = await listen();
const other = await listen();
const svc = await startAgentsService(nats, db, { discovery_port: rx.port, discovery_networks: ["127.0.0.0/8"] });
const nc = await nats.connect("caller");
const ev = collectEvents(nc);
const { c } = agentsClient(nc);
t.teardown(async () => {
  rx.sock.close();
  other.sock.close();
  await svc.stop();
  await db.drop();
  await nats.stop();
});
const as = (actor: Actor) => ({ actor });

t.test("an operator reaches a target inside the configured networks", async (t) => {
  const r = await c.discover({ target: `127.0.0.1:${rx.port}` }, as(OPERATOR));
  t.same(r.sentTo, [`127.0.0.1:${rx.port}`]);
  await eventually(() => rx.got.length === 1);
  t.match(JSON.parse(rx.got[0]!), { type: "orch.discover", link: svc.server });
  const e = await ev.wait("discovery.sent");
  t.equal(e.actor?.id, OPERATOR.id);
});

t.test(
  "unicast outside the networks: 403 for an operator; special space refused for everyone; port fixed",
  async (t) => {
    const before = ev.of("discovery.sent").length;
    // Refused before anything is sent: no packet leaves for 10.255.255.1.
    await refused(
      t,
      c.discover({ target: `10.255.255.1:${rx.port}` }, as(OPERATOR)),
      "PERMISSION_DENIED",
      "discovery_target_not_allowed",
    );
    await refused(
      t,
      c.discover({ target: `8.8.8.8:${rx.port}` }, as(OPERATOR)),
      "PERMISSION_DENIED",
      "discovery_target_not_allowed",
    );
    await refused(
      t,
      c.discover({ target: `[::1]:${rx.port}` }, as(ADMIN)),
      "PERMISSION_DENIED",
      "discovery_target_refused",
    );
    await refused(
      t,
      c.discover({ target: `[::7f00:1]:${rx.port}` }, as(ADMIN)),
      "PERMISSION_DENIED",
      "discovery_target_refused",
    );
    await refused(
      t,
      c.discover({ target: `224.0.0.251:${rx.port}` }, as(ADMIN)),
      "PERMISSION_DENIED",
      "discovery_target_refused",
    );
    await refused(
      t,
      c.discover({ target: `169.254.169.254:${rx.port}` }, as(ADMIN)),
      "PERMISSION_DENIED",
      "discovery_target_refused",
    );
    // Any other port, even on an allowed address, for any role: no port probing.
    await refused(
      t,
      c.discover({ target: `127.0.0.1:${other.port}` }, as(OPERATOR)),
      "INVALID_ARGUMENT",
      "discovery_port_not_allowed",
    );
    await refused(
      t,
      c.discover({ target: `127.0.0.1:${other.port}` }, as(ADMIN)),
      "INVALID_ARGUMENT",
      "discovery_port_not_allowed",
    );
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    t.equal(other.got.length, 0, "nothing reached the other port");
    t.equal(rx.got.length, 1, "nothing more reached the discovery port");
    t.equal(ev.of("discovery.sent").length, before, "no event for a refused request");
  },
);
