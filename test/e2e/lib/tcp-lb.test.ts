import t from "tap";
import { connect, createServer, type Server, type Socket } from "node:net";
import { freePort } from "@orch/kit/testing";
import { startTcpLoadBalancer } from "./tcp-lb.js";

// The scale test's stand-in for the agent-link LoadBalancer: round-robin, skips a dead backend,
// relays bytes both ways, and drops the client's connection when its backend goes away.

/** A backend that greets with its name and echoes what it receives. */
async function backend(name: string) {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
    s.write(`${name}:`);
    s.pipe(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    /** Stops listening and cuts its connections, like a killed process. */
    async kill() {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

/** Connects through the LB, sends `msg`, resolves with everything read until `want` bytes arrived. */
function exchange(port: number, msg: string, want: number): Promise<{ text: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1");
    let text = "";
    s.on("data", (d) => {
      text += d.toString();
      if (text.length >= want) resolve({ text, socket: s });
    });
    s.once("error", reject);
    s.once("close", () => reject(new Error(`closed after ${JSON.stringify(text)}`)));
    s.write(msg);
  });
}

const closedSoon = (s: Socket) =>
  new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once("close", () => resolve())));

t.test("round-robin over live backends, bytes relayed both ways", async (t) => {
  const a = await backend("a");
  const b = await backend("b");
  const lb = await startTcpLoadBalancer({
    backends: [
      { host: "127.0.0.1", port: a.port },
      { host: "127.0.0.1", port: b.port },
    ],
  });
  t.teardown(async () => {
    await lb.close();
    await a.kill();
    await b.kill();
  });
  const seen: string[] = [];
  for (let i = 0; i < 4; i++) {
    const { text, socket } = await exchange(lb.port, `m${i}`, 4);
    seen.push(text);
    socket.destroy();
  }
  t.same(seen, ["a:m0", "b:m1", "a:m2", "b:m3"]);
  t.same(lb.relayed(), { [`127.0.0.1:${a.port}`]: 2, [`127.0.0.1:${b.port}`]: 2 });
});

t.test("a dead backend is skipped; its clients are cut and reconnect to the live one", async (t) => {
  const a = await backend("a");
  const b = await backend("b");
  const lb = await startTcpLoadBalancer({
    backends: [
      { host: "127.0.0.1", port: a.port },
      { host: "127.0.0.1", port: b.port },
    ],
  });
  t.teardown(async () => {
    await lb.close();
    await b.kill();
  });
  const onA = await exchange(lb.port, "x", 3);
  t.equal(onA.text, "a:x");
  const cut = closedSoon(onA.socket);
  await a.kill();
  await cut;
  t.ok(onA.socket.destroyed, "the client's connection ends with its backend");
  for (let i = 0; i < 3; i++) {
    const { text, socket } = await exchange(lb.port, "y", 3);
    t.equal(text, "b:y", `connection ${i + 1} lands on the live backend`);
    socket.destroy();
  }
  t.equal(lb.refused(), 0);
});

t.test("no live backend: the client connection is closed", async (t) => {
  const lb = await startTcpLoadBalancer({ backends: [{ host: "127.0.0.1", port: await freePort() }] });
  t.teardown(() => lb.close());
  await t.rejects(exchange(lb.port, "z", 1), /closed after ""/);
  t.equal(lb.refused(), 1);
});
