import t from "tap";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PTY_DIM_MAX } from "@orch/contracts";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";

// cols and rows are int32 in the API contract: a size past what a PTY takes opens the session
// anyway, clamped, and the answer says so. Real auth, agents, terminal and gateway services and a
// real orch-agent with a real PTY. Needs `npm run build`.
type Stack = {
  nats?: Awaited<ReturnType<typeof startNats>>;
  db?: Awaited<ReturnType<typeof createTestDatabase>>;
  system?: Awaited<ReturnType<typeof startSystem>>;
};
const stack: Stack = {};
const agents = agentPool();
const transcripts = mkdtempSync(join(tmpdir(), "orch-e2e-size-"));
// Registered before anything starts, so a failed start-up still stops what did start.
t.teardown(async () => {
  await agents.stop();
  await stack.system?.stop();
  await stack.db?.drop();
  await stack.nats?.stop();
  rmSync(transcripts, { recursive: true, force: true });
});

const nats = (stack.nats = await startNats());
const db = (stack.db = await createTestDatabase());
const linkPort = await freePort();
const system = (stack.system = await startSystem({
  nats,
  db,
  services: ["auth", "agents", "terminal", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_TERMINAL_TRANSCRIPT_DIR: transcripts,
    ORCH_TERMINAL_OPEN_TIMEOUT_SECONDS: "10",
  },
}));
const token = await system.login(system.admin);
const api = (method: string, path: string, o: { body?: unknown } = {}) => system.api(method, path, { token, ...o });

const web = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/sh"]);
const nodeId = await web.nodeId();
await eventually(async () => (await api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true, 30_000);
const approved = await api("POST", `/api/v1/agents/${nodeId}`, { body: { status: "approved", name: "size-1" } });
if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${approved.text}`);

t.test("cols=5000&rows=3000 opens a session (201), clamped, and says so", async (t) => {
  const r = await api("POST", "/api/v1/terminal/size-1?cols=5000&rows=3000");
  t.equal(r.status, 201, r.text);
  t.match(r.body, { session_id: String, ws_url: String, cols: PTY_DIM_MAX, rows: PTY_DIM_MAX, clamped: true });
  const s = await api("GET", `/api/v1/terminal/session/${r.body.session_id}`);
  t.equal(s.status, 200);
  t.match(s.body, { cols: PTY_DIM_MAX, rows: PTY_DIM_MAX }, "the session records the size the PTY got");
  t.equal((await api("DELETE", `/api/v1/terminal/session/${r.body.session_id}`)).status, 204);
});

t.test("a size the PTY takes is not clamped", async (t) => {
  const r = await api("POST", "/api/v1/terminal/size-1?cols=132&rows=43");
  t.equal(r.status, 201, r.text);
  t.match(r.body, { cols: 132, rows: 43, clamped: false });
  t.equal((await api("DELETE", `/api/v1/terminal/session/${r.body.session_id}`)).status, 204);
});

t.test("0 and past-int32 are 400 invalid_request", async (t) => {
  for (const qs of ["cols=0", "rows=2147483648"]) {
    const r = await api("POST", `/api/v1/terminal/size-1?${qs}`);
    t.equal(r.status, 400, qs);
    t.equal(r.body?.code, "invalid_request", qs);
  }
});
