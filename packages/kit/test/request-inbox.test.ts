import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { create } from "@bufbuild/protobuf";
import { headers } from "@nats-io/transport-node";
import { AuthService, OperatorSchema } from "@orch/contracts";
import { OrchError, rpcClient, serveRpc, type Handlers } from "@orch/kit";
import { busError, connectNats } from "../src/nats.js";
import { silentLogger, startNats } from "@orch/kit/testing";
import { request } from "../src/request-inbox.js";

// One user may not publish to orch.denied.>: the server refuses it with a permissions violation.
const dir = mkdtempSync(join(tmpdir(), "orch-inbox-"));
const config = join(dir, "nats.conf");
writeFileSync(
  config,
  `authorization { users = [ { user: "probe", password: "probe", permissions: { publish: { deny: ["orch.denied.>"] } } } ] }\n`,
);
const nats = await startNats({ configFile: config });
t.teardown(() => nats.stop());
const connect = (name: string) => connectNats({ url: nats.url, name, user: "probe", password: "probe" });
const nc = await connect("inbox-test");
t.teardown(() => nc.close());
const enc = new TextEncoder();
const dec = new TextDecoder();

t.test("replies come back on the connection's own inbox prefix, each to its own request", async (t) => {
  const seen: string[] = [];
  // Answers in reverse order of arrival: each reply must still reach the request it answers.
  const held: Array<() => void> = [];
  const sub = nc.subscribe("orch.echo.x", {
    callback: (_e, m) => {
      seen.push(m.reply ?? "");
      held.push(() => m.respond(enc.encode(`re:${dec.decode(m.data)}`)));
      if (held.length === 5) for (const r of held.reverse()) r();
    },
  });
  t.teardown(() => sub.unsubscribe());
  const replies = await Promise.all(
    [0, 1, 2, 3, 4].map((i) => request(nc, "orch.echo.x", enc.encode(String(i)), 2000, headers())),
  );
  t.same(
    replies.map((m) => dec.decode(m.data)),
    ["re:0", "re:1", "re:2", "re:3", "re:4"],
  );
  t.ok(
    seen.every((r) => r.startsWith("_INBOX_inbox-test.")),
    "reply subjects under _INBOX_<name>. (bus permissions)",
  );
});

t.test("a reply after the timeout is dropped; the next request is answered", async (t) => {
  let delay = 300;
  const sub = nc.subscribe("orch.slow.x", {
    callback: (_e, m) => void setTimeout(() => m.respond(enc.encode("late")), delay),
  });
  t.teardown(() => sub.unsubscribe());
  const err = await request(nc, "orch.slow.x", enc.encode(""), 50, headers()).catch((e: unknown) => e);
  t.equal(busError(err).code, "DEADLINE_EXCEEDED");
  delay = 0;
  await new Promise((r) => setTimeout(r, 400)); // the late reply arrives meanwhile
  const m = await request(nc, "orch.slow.x", enc.encode(""), 2000, headers());
  t.equal(dec.decode(m.data), "late");
});

t.test("no responders, and a publish the server refuses, fail at once with their own codes", async (t) => {
  const none = await request(nc, "orch.nobody.x", enc.encode(""), 5000, headers()).catch((e: unknown) => e);
  t.equal(busError(none).reason, "service_unavailable");
  const client = rpcClient(nc, "denied", AuthService, { timeoutMs: 5000 });
  const denied = await client.getOperator({ id: "x" }).catch((e: unknown) => e);
  t.ok(denied instanceof OrchError);
  t.equal((denied as OrchError).reason, "bus_permission_denied");
});

t.test("closing the connection fails what is pending as bus_unavailable", async (t) => {
  const other = await connect("closing");
  const log = silentLogger();
  // Handlers answer only once the caller is gone (released before the server stops).
  let release = () => {};
  const gone = new Promise<void>((r) => (release = r));
  const handlers = Object.fromEntries(
    AuthService.methods.map((m) => [m.localName, () => gone.then(() => Promise.reject(new Error("caller gone")))]),
  ) as unknown as Handlers<typeof AuthService>;
  const server = serveRpc({ nc, name: "hang", service: AuthService, handlers, log });
  t.teardown(() => server.stop());
  // The server's subscription is on another connection: flushed, it is known before the request arrives.
  await nc.flush();
  const client = rpcClient(other, "hang", AuthService, { timeoutMs: 10_000 });
  const pending = client.getOperator({ id: "x" }).catch((e: unknown) => e);
  await new Promise((r) => setTimeout(r, 200));
  await other.close();
  const err = await pending;
  release();
  t.ok(err instanceof OrchError);
  t.equal((err as OrchError).reason, "bus_unavailable");
  const after = await client.getOperator({ id: "x" }).catch((e: unknown) => e);
  t.equal((after as OrchError).reason, "bus_unavailable", "and what is asked after");
  // The typed round trip still works on the open connection.
  const ok = serveRpc({
    nc,
    name: "okay",
    service: AuthService,
    log,
    handlers: {
      ...handlers,
      getOperator: async () => create(OperatorSchema, { id: "1", name: "alice" }),
    },
  });
  t.teardown(() => ok.stop());
  t.equal((await rpcClient(nc, "okay", AuthService, { timeoutMs: 2000 }).getOperator({ id: "1" })).name, "alice");
});
