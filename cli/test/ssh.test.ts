import t, { type Test } from "tap";
import { EventEmitter } from "node:events";
import type { AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import { WebSocketServer } from "ws";
import { eventually } from "@orch/kit/testing";
import { attachTerminal, type TerminalIO } from "../src/commands/ssh.js";
import { cli } from "./helpers/cli.js";
import { loggedIn } from "./helpers/setup.js";
import { agentRecord, serveAgents } from "./helpers/agents.js";

// orchctl ssh under a terminal that reports 0×0 (e.g. inside `script`): the session opens and
// resizes as 80×24 instead of sending a size the server refuses.

/** Makes process.stdout look like a terminal of the given size for one test. */
function fakeTerminalStdout(t: Test, columns: number | undefined, rows: number | undefined): void {
  const out = process.stdout as unknown as Record<string, unknown>;
  const saved = ["isTTY", "columns", "rows"].map((k) => [k, Object.getOwnPropertyDescriptor(out, k)] as const);
  Object.defineProperty(out, "isTTY", { value: true, configurable: true, writable: true });
  Object.defineProperty(out, "columns", { value: columns, configurable: true, writable: true });
  Object.defineProperty(out, "rows", { value: rows, configurable: true, writable: true });
  t.teardown(() => {
    for (const [k, d] of saved) {
      if (d) Object.defineProperty(out, k, d);
      else delete out[k];
    }
  });
}

for (const [label, cols, rows] of [
  ["0x0", 0, 0],
  ["unknown", undefined, undefined],
] as const) {
  t.test(`ssh: a ${label} terminal opens the session as 80x24`, async (t) => {
    const w = await loggedIn(t);
    const [web1] = serveAgents(w, [agentRecord({ name: "web-1", node_id: "ab".repeat(16) })]);
    w.server.overrides.set(`POST /api/v1/terminal/${web1!.node_id}`, (_req, res) => {
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ session_id: "s-1", ws_url: "ws://127.0.0.1:1/attach" }));
    });
    fakeTerminalStdout(t, cols, rows);
    const r = await cli(["ssh", "web-1", "--json"], w.env);
    t.equal(r.code, 0, r.stderr);
    const open = w.server.requests.find((q) => q.path === `/api/v1/terminal/${web1!.node_id}`);
    t.equal(open?.query.get("cols"), "80");
    t.equal(open?.query.get("rows"), "24");
  });
}

t.test("ssh: a 0x0 terminal resizes the session as 80x24, a sized one as its size", async (t) => {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise((r) => wss.once("listening", r));
  t.teardown(() => new Promise((r) => wss.close(r)));
  const resizes: unknown[] = [];
  wss.on("connection", (ws) =>
    ws.on("message", (d, binary) => {
      if (binary) return;
      resizes.push(JSON.parse(d.toString()));
      if (resizes.length === 2) ws.close(1000, "exit:0");
    }),
  );
  const stdout = Object.assign(new EventEmitter(), { isTTY: true, columns: 0, rows: 0, write: () => true });
  const stdin = new PassThrough();
  const tio = { stdin, stdout, stderr: { write: () => true } } as unknown as TerminalIO;
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/`;
  const exit = attachTerminal(url, "token", tio);
  // After the first (0×0) size has been sent, the window gets a real size.
  await eventually(() => resizes.length === 1);
  Object.assign(stdout, { columns: 132, rows: 40 });
  stdout.emit("resize");
  t.equal(await exit, 0);
  t.same(resizes, [
    { type: "resize", cols: 80, rows: 24 },
    { type: "resize", cols: 132, rows: 40 },
  ]);
});

t.test("ssh piped: the remote terminal's control sequences are removed unless --raw", async (t) => {
  const sent = "\x1b[?2004hroot@web-1:~# \x1b[?2004l\r\nhello\r\n\x1b]0;title\x07done\r\n";
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise((r) => wss.once("listening", r));
  t.teardown(() => new Promise((r) => wss.close(r)));
  wss.on("connection", (ws) =>
    // Answers the first input (attachTerminal listens by then), split mid-sequence: the stripper
    // must carry its state from one frame to the next.
    ws.once("message", () => {
      ws.send(Buffer.from(sent.slice(0, 5)), { binary: true });
      ws.send(Buffer.from(sent.slice(5)), { binary: true }, () => ws.close(1000, "exit:0"));
    }),
  );
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/`;
  const attach = async (raw: boolean) => {
    let written = "";
    const write = (d: Buffer) => {
      written += d.toString();
      return true;
    };
    const stdout = Object.assign(new EventEmitter(), { write });
    const stdin = new PassThrough();
    stdin.write("uptime\n");
    const tio = { stdin, stdout, stderr: { write: () => true } } as unknown as TerminalIO;
    t.equal(await attachTerminal(url, "token", tio, { raw }), 0);
    return written;
  };
  t.equal(await attach(false), "root@web-1:~# \nhello\ndone\n");
  t.equal(await attach(true), sent, "--raw: the bytes as sent");
});
