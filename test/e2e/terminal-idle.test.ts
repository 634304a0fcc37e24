import t, { type Test } from "tap";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, eventually, freePort, startNats, startSystem, waitMs } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";
import { attach, type Attached } from "../../services/terminal/test/harness.js";

// The idle timeout with real processes (a real orch-agent and PTY): a session nobody types into and
// that prints nothing is closed as `idle_timeout` and audited; output alone, or input alone, keeps
// one open past the timeout. The console reads the timeout from the session (idle_timeout_seconds).
const IDLE_SECONDS = 3;
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const transcripts = mkdtempSync(join(tmpdir(), "orch-e2e-idle-"));
t.teardown(() => rmSync(transcripts, { recursive: true, force: true }));
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "audit", "agents", "terminal", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_TERMINAL_TRANSCRIPT_DIR: transcripts,
    ORCH_TERMINAL_IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS),
    ORCH_TERMINAL_HEARTBEAT_SECONDS: "1",
  },
});
const agents = agentPool();
t.teardown(() => agents.stop());

const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, path, { token, ...(body !== undefined ? { body } : {}) });
const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/sh"]);
const nodeId = await agent.nodeId();
await eventually(async () => (await api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true, 20_000);
if ((await api("POST", `/api/v1/agents/${nodeId}`, { status: "approved", name: "idle-1" })).status !== 200)
  throw new Error("approve idle-1");

async function openAttached(): Promise<{ id: string; a: Attached }> {
  const o = await api("POST", "/api/v1/terminal/idle-1");
  if (o.status !== 201) throw new Error(`open: ${o.status} ${o.text}`);
  const r = await attach(o.body.ws_url);
  if (!r.ok) throw new Error(`attach refused: ${r.status}`);
  return { id: o.body.session_id, a: r.a };
}
const session = async (id: string) => (await api("GET", `/api/v1/terminal/session/${id}`)).body;

/** Keeps `keep` going for twice the idle timeout (scaled for load), then checks the session is still open. */
async function staysOpen(t: Test, id: string, keep: () => void, what: string) {
  const timer = setInterval(keep, 300);
  try {
    await new Promise((r) => setTimeout(r, waitMs(2 * IDLE_SECONDS * 1000)));
    const s = await session(id);
    t.equal(s.status, "open", `${what} keeps the session open past the idle timeout`);
  } finally {
    clearInterval(timer);
  }
}

t.test("an idle session is closed as idle_timeout, and audited", async (t) => {
  const { id, a } = await openAttached();
  t.equal((await session(id)).idle_timeout_seconds, IDLE_SECONDS, "the session says when it will be closed");
  const end = await a.closed;
  t.equal(end.reason, "ended:closed:idle_timeout", "the socket says why");
  const s = await eventually(async () => {
    const x = await session(id);
    return x.status === "closed" ? x : undefined;
  });
  t.equal(s.close_reason, "idle_timeout");
  t.type(s.closed_at, "number");
  const ev = await eventually(async () => {
    const r = await api("GET", "/api/v1/audit?event_type=terminal.session.closed&limit=50");
    return r.body?.events?.find((e: { target: { id: string } }) => e.target.id === id);
  });
  t.equal(ev.metadata.reason, "idle_timeout");
  t.equal(ev.actor.type, "system", "closed by the system, not by the operator");
  await eventually(
    async () =>
      !(await api("GET", "/api/v1/terminal?status=open")).body.some((x: { session_id: string }) => x.session_id === id),
  );
});

t.test("output alone keeps a session open; so does input alone", async (t) => {
  const out = await openAttached();
  // The shell prints every 0.3 s without anyone typing (its own echo of this line is before the loop).
  out.a.send("while :; do echo tick; sleep 0.3; done\r");
  await staysOpen(t, out.id, () => {}, "output");
  t.match(out.a.text(), /tick\r?\n[\s\S]*tick/, "the ticks arrived");

  const input = await openAttached();
  // Echo off and nothing printed back: the only activity is what the operator sends.
  input.a.send("stty -echo; echo ready; cat > /dev/null\r");
  // "ready" printed: echo is off from here on, and cat prints nothing.
  await eventually(async () => /ready\r\n/.test(input.a.text()));
  const before = input.a.text().length;
  await staysOpen(t, input.id, () => input.a.send("x"), "input");
  t.equal(input.a.text().length, before, "nothing was printed meanwhile");

  for (const { id } of [out, input]) t.equal((await api("DELETE", `/api/v1/terminal/session/${id}`)).status, 204);
});
