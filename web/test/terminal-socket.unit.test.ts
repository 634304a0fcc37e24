// The terminal attach as a state machine: close codes and reasons from the gateway
// (services/gateway/src/ws/bridge.ts endReason, 4401 on revocation) read into the status line's
// words, and a fake socket driving TerminalSocket through its states.
import t from "tap";
import {
  type SocketLike,
  resizeFrame,
  stateOfSession,
  statusText,
  type TerminalState,
  TerminalSocket,
  transition,
} from "../src/lib/terminal-socket.js";
import { checksumStatus, toHex } from "../src/pages/terminal/sha256.js";

const close = (code: number, reason: string, from: TerminalState = { kind: "open" }) =>
  statusText(transition(from, { type: "close", code, reason }));

t.test("close reasons read as the status line says them", async (t) => {
  t.equal(close(1000, "exit:0"), "closed (exit 0)");
  t.equal(close(1000, "exit:130"), "closed (exit 130)");
  t.equal(close(1000, "exit:-1"), "agent disconnected", "the relay's exit for a dropped agent link");
  t.equal(close(1000, "ended:failed:agent_lost"), "agent disconnected");
  t.equal(close(1000, "ended:failed:recorder_lost"), "session failed (recorder_lost)");
  t.equal(close(1000, "ended:closed:idle_timeout"), "closed (idle_timeout)");
  t.equal(close(4401, "logged_out"), "signed out (logged_out)");
  t.equal(
    close(4403, "agent_out_of_scope"),
    "this agent is no longer in your access scope (agent_out_of_scope)",
    "the agent left the operator's scope",
  );
  t.equal(
    close(4403, "scope_changed"),
    "your access scope changed: this agent is no longer in it (scope_changed)",
    "the operator's own scope changed",
  );
  t.same(
    transition({ kind: "open" }, { type: "close", code: 4403, reason: "scope_changed" }),
    {
      kind: "failed",
      reason: "your access scope changed: this agent is no longer in it (scope_changed)",
      reattach: false,
    },
    "no reattach offered: a new ticket would be refused too",
  );
  t.equal(close(1001, "gateway shutting down"), "gateway went away");
  t.equal(close(1006, ""), "connection lost");
  t.equal(close(1006, "", { kind: "connecting" }), "could not attach", "refused before it opened");
  t.equal(close(1011, "bridge_failed"), "disconnected (bridge_failed)");
});

t.test("transitions: connecting → open → finished, and a finished state stays", async (t) => {
  let s: TerminalState = { kind: "connecting" };
  t.equal(statusText(s), "connecting");
  s = transition(s, { type: "open" });
  t.same(s, { kind: "open" });
  s = transition(s, { type: "close", code: 1000, reason: "exit:2" });
  t.same(s, { kind: "closed", exitCode: 2, reason: "exit" });
  t.equal(transition(s, { type: "open" }), s, "a late open changes nothing");
  t.equal(transition(s, { type: "close", code: 1006, reason: "" }), s, "nor a late close");
  t.match(transition({ kind: "open" }, { type: "close", code: 1006, reason: "" }), { reattach: true });
  t.match(transition({ kind: "open" }, { type: "close", code: 1000, reason: "exit:-1" }), { reattach: false });
});

t.test("a session's API state reads like the live status", async (t) => {
  const base = { exit_code: null, close_reason: null };
  t.equal(statusText(stateOfSession({ ...base, status: "open" })), "open");
  t.equal(statusText(stateOfSession({ ...base, status: "opening" })), "connecting");
  t.equal(statusText(stateOfSession({ status: "closed", exit_code: 0, close_reason: "exit" })), "closed (exit 0)");
  t.equal(
    statusText(stateOfSession({ status: "closed", exit_code: 129, close_reason: "idle_timeout" })),
    "closed (idle_timeout)",
    "a limit the service imposed reads as that limit, not as the SIGHUP's exit 129 (as on the live socket)",
  );
  t.equal(
    statusText(stateOfSession({ status: "failed", exit_code: null, close_reason: "agent_lost" })),
    "agent disconnected",
  );
  t.equal(
    statusText(stateOfSession({ status: "closed", exit_code: null, close_reason: "detached" })),
    "closed (detached)",
  );
  t.equal(
    statusText(stateOfSession({ status: "failed", exit_code: null, close_reason: "open_interrupted" })),
    "session failed (open_interrupted)",
  );
});

t.test("resize frames are the gateway's one accepted control, clamped to 1..1000", async (t) => {
  t.same(JSON.parse(resizeFrame(120, 40)), { type: "resize", cols: 120, rows: 40 });
  t.same(JSON.parse(resizeFrame(0, 5000.7)), { type: "resize", cols: 1, rows: 1000 });
});

class FakeSocket implements SocketLike {
  binaryType = "blob";
  readyState = 0;
  sent: Array<string | Uint8Array> = [];
  closedWith: [number?, string?] | undefined;
  onopen: SocketLike["onopen"] = null;
  onmessage: SocketLike["onmessage"] = null;
  onclose: SocketLike["onclose"] = null;
  onerror: SocketLike["onerror"] = null;
  constructor(readonly url: string) {}
  send(d: string | ArrayBufferLike | Uint8Array) {
    this.sent.push(typeof d === "string" ? d : new Uint8Array(d as ArrayBuffer));
  }
  close(code?: number, reason?: string) {
    this.closedWith = [code, reason];
  }
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }
  serverClose(code: number, reason: string) {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
}

function harness() {
  let ws!: FakeSocket;
  const states: string[] = [];
  const output: string[] = [];
  const sock = new TerminalSocket(
    "ws://h/attach?ticket=x",
    {
      onData: (b) => output.push(new TextDecoder().decode(b)),
      onState: (s) => states.push(statusText(s)),
    },
    (url) => (ws = new FakeSocket(url)),
  );
  return { sock, ws, states, output };
}

t.test("TerminalSocket: queued input and the size go out on open; bytes in reach the terminal", async (t) => {
  const { sock, ws, states, output } = harness();
  t.equal(ws.url, "ws://h/attach?ticket=x", "the URL from the API, as given");
  t.equal(ws.binaryType, "arraybuffer");
  sock.write("ls\r");
  sock.resize(100, 30);
  t.same(ws.sent, [], "nothing sent before the socket opens");
  ws.open();
  t.same(states, ["open"]);
  t.same(ws.sent[0], resizeFrame(100, 30), "the size first");
  t.equal(new TextDecoder().decode(ws.sent[1] as Uint8Array), "ls\r", "then what was typed");
  sock.resize(90, 20);
  t.same(ws.sent[2], resizeFrame(90, 20));
  ws.onmessage?.({ data: new TextEncoder().encode("hello\r\n").buffer });
  ws.onmessage?.({ data: '{"type":"error","code":"invalid_control"}' });
  t.same(output, ["hello\r\n"], "binary frames only");
  ws.serverClose(1000, "exit:0");
  t.same(states, ["open", "closed (exit 0)"]);
  sock.write("more");
  t.equal(ws.sent.length, 3, "nothing is sent after the end");
});

t.test("TerminalSocket: detaching closes quietly and reports nothing more", async (t) => {
  const { sock, ws, states } = harness();
  ws.open();
  sock.detach();
  t.same(ws.closedWith, [1000, "detach"]);
  ws.serverClose(1000, "detach");
  t.same(states, ["open"]);
});

t.test("SHA-256 status compares hex case-insensitively; no stored checksum says so", async (t) => {
  t.equal(toHex(new Uint8Array([0, 15, 255]).buffer), "000fff");
  t.equal(checksumStatus("abcd", "ABCD"), "SHA-256 matches");
  t.equal(checksumStatus("abcd", "abce"), "SHA-256 does not match");
  t.equal(checksumStatus("abcd", null), "no checksum");
});
