import t from "tap";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, ed25519, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";
import { asciinemaCat, attach, type Attached } from "../../services/terminal/test/harness.js";

// Terminals end to end with real processes: auth, agents, terminal and gateway services and real
// orch-agent daemons with real PTYs, driven through the HTTP API and the WebSocket.
// Needs `npm run build` (every service's dist/main.js and agent/dist/main.js).
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const transcripts = mkdtempSync(join(tmpdir(), "orch-e2e-transcripts-"));
t.teardown(() => rmSync(transcripts, { recursive: true, force: true }));
const TICKET_TTL = 3;
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "terminal", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_TERMINAL_TRANSCRIPT_DIR: transcripts,
    ORCH_TERMINAL_TICKET_TTL_SECONDS: String(TICKET_TTL),
    ORCH_TERMINAL_OPEN_TIMEOUT_SECONDS: "3",
    ORCH_TERMINAL_LEASE_SECONDS: "2",
    ORCH_TERMINAL_HEARTBEAT_SECONDS: "1",
  },
});
const agents = agentPool();
t.teardown(async () => {
  await agents.stop();
});

const token = await system.login(system.admin);
const api = (
  method: string,
  path: string,
  o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
) => system.api(method, path, { token, ...o });
const server = `127.0.0.1:${linkPort}`;
const web = agents.spawn(["--server", server, "--shell", "/bin/bash", "--shell", "/bin/sh"]);
const off = agents.spawn(["--server", server, "--no-terminal"]);
const pending = agents.spawn(["--server", server]);
const gone = agents.spawn(["--server", server]);
const ids = {
  web: await web.nodeId(),
  off: await off.nodeId(),
  pending: await pending.nodeId(),
  gone: await gone.nodeId(),
};
for (const id of Object.values(ids))
  await eventually(async () => (await api("GET", `/api/v1/agents/${id}`)).body?.connected === true, 20_000);
for (const [name, id] of [
  ["web-1", ids.web],
  ["off-1", ids.off],
  ["gone-1", ids.gone],
]) {
  const r = await api("POST", `/api/v1/agents/${id}`, { body: { status: "approved", name } });
  if (r.status !== 200) throw new Error(`approve ${name}: ${r.status} ${r.text}`);
}
await gone.signal("SIGKILL");
await eventually(async () => (await api("GET", `/api/v1/agents/${ids.gone}`)).body?.connected === false, 30_000);

const carolKey = ed25519();
if (
  (
    await api("POST", "/api/v1/operators", {
      body: { name: "carol", public_key: carolKey.publicKeyHex, role: "operator" },
    })
  ).status !== 201
)
  throw new Error("create carol");
const carol = await system.login(carolKey);

async function open(node = "web-1", query = "") {
  const r = await api("POST", `/api/v1/terminal/${node}${query}`);
  if (r.status !== 201) throw new Error(`open ${node}: ${r.status} ${r.text}`);
  return r.body as { session_id: string; ws_url: string };
}
async function attached(url: string, o: { origin?: string; token?: string } = {}): Promise<Attached> {
  const r = await attach(url, o);
  if (!r.ok) throw new Error(`attach refused: ${r.status} ${JSON.stringify(r.body)}`);
  return r.a;
}
const session = async (id: string) => (await api("GET", `/api/v1/terminal/session/${id}`)).body;
const settled = (id: string, timeout = 30_000) =>
  eventually(async () => {
    const s = await session(id);
    return s.status === "closed" || s.status === "failed" ? s : undefined;
  }, timeout);

t.test("open, echo hello-$RANDOM; exit: the output arrives, the session closes, the transcript plays", async (t) => {
  const o = await open("web-1", "?cols=100&rows=30");
  t.match(o.ws_url, new RegExp(`^ws://127\\.0\\.0\\.1:\\d+/api/v1/terminal/session/${o.session_id}/attach\\?ticket=`));
  t.notOk(o.ws_url.includes(token), "the bearer token is not in the URL");
  const a = await attached(o.ws_url);
  a.send("echo hello-$RANDOM; exit\r");
  const end = await a.closed;
  t.equal(end.reason, "exit:0");
  const hello = /hello-(\d+)/.exec(a.text());
  t.ok(hello, `output received: ${hello?.[0]}`);

  const s = await settled(o.session_id);
  t.equal(s.status, "closed");
  t.type(s.closed_at, "number");
  t.equal(s.exit_code, 0);
  t.equal(s.node_id, ids.web);
  t.equal(s.transcript_path, join(transcripts, `${o.session_id}.cast`));

  const dl = await fetch(`${system.url}/api/v1/terminal/session/${o.session_id}/transcript`, {
    headers: { authorization: `Bearer ${token}` },
  });
  t.equal(dl.status, 200);
  t.equal(dl.headers.get("content-type"), "application/x-asciicast");
  const body = Buffer.from(await dl.arrayBuffer());
  t.equal(
    createHash("sha256").update(body).digest("hex"),
    s.sha256,
    "the download matches the SHA-256 stored at close",
  );
  const file = join(transcripts, "download.cast");
  writeFileSync(file, body);
  const played = await asciinemaCat(file);
  t.equal(played.code, 0, "asciinema cat accepts the file");
  t.match(played.output, hello![0], "asciinema cat prints the session's output");
});

t.test("a large output arrives complete and in order, and the transcript holds the same bytes", async (t) => {
  const o = await open();
  const a = await attached(o.ws_url);
  const count = 150_000; // about 1 MB: many batched messages on every hop
  a.send(`stty -echo; echo BEG''IN; seq 1 ${count}; echo EN''D; exit\r`);
  t.equal((await a.closed).reason, "exit:0");
  const out = a.text();
  const start = out.indexOf("BEGIN\r\n");
  const end = out.indexOf("END\r\n");
  t.ok(start >= 0 && end > start, "both markers arrived");
  const want = Array.from({ length: count }, (_, i) => `${i + 1}\r\n`).join("");
  const got = out.slice(start + "BEGIN\r\n".length, end);
  t.equal(got.length, want.length, "every byte arrived");
  t.ok(got === want, "in order, none duplicated or reordered");

  const s = await settled(o.session_id);
  const recorded = readFileSync(s.transcript_path, "utf8")
    .split("\n")
    .slice(1)
    .filter(Boolean)
    .map((l) => JSON.parse(l) as [number, string, string])
    .filter(([, kind]) => kind === "o")
    .map(([, , text]) => text)
    .join("");
  t.ok(recorded === out, `the transcript holds exactly what the client received (${recorded.length} bytes)`);
});

t.test("a resize makes stty size report the new size", async (t) => {
  const o = await open("web-1");
  const a = await attached(o.ws_url);
  a.control({ type: "resize", cols: 120, rows: 40 });
  a.send("stty size; exit\r");
  await a.closed;
  t.match(a.text(), /40 120/);
});

t.test("ticket reuse, expired ticket, foreign Origin, another operator's ticket: refused", async (t) => {
  const o = await open("web-1");
  const refused = async (
    url: string,
    opts: { origin?: string; token?: string },
    status: number,
    code: string,
    what: string,
  ) => {
    const r = await attach(url, opts);
    t.notOk(r.ok, what);
    if (!r.ok) {
      t.equal(r.status, status, `${what}: HTTP ${status}`);
      t.equal(r.body.code, code, `${what}: ${code}`);
    }
  };
  await refused(o.ws_url, { origin: "https://evil.example.net" }, 403, "origin_not_allowed", "foreign Origin");
  await refused(o.ws_url, { token: carol }, 403, "ticket_operator_mismatch", "another operator's ticket");
  await refused(o.ws_url, {}, 401, "invalid_ticket", "the ticket was spent by the refused attempt");
  const again = await api("POST", `/api/v1/terminal/session/${o.session_id}/ticket`);
  const a = await attached(again.body.ws_url, { origin: system.url });
  await refused(again.body.ws_url, {}, 401, "invalid_ticket", "reuse");
  const late = await api("POST", `/api/v1/terminal/session/${o.session_id}/ticket`);
  await new Promise((r) => setTimeout(r, TICKET_TTL * 1000 + 500));
  await refused(late.body.ws_url, {}, 401, "ticket_expired", "expired");
  a.send("exit\r");
  await a.closed;
});

t.test("another operator cannot read the session or its transcript (404)", async (t) => {
  const [first] = (await api("GET", "/api/v1/terminal?status=closed")).body;
  for (const p of ["", "/transcript"]) {
    const r = await system.api("GET", `/api/v1/terminal/session/${first.session_id}${p}`, { token: carol });
    t.equal(r.status, 404, `GET ${p || "session"}`);
    t.equal(r.body.code, "session_not_found");
  }
  t.same((await system.api("GET", "/api/v1/terminal", { token: carol })).body, [], "carol lists none of them");
});

t.test("every documented error condition answers with its status and code", async (t) => {
  const problem = async (path: string, status: number, code: string) => {
    const r = await api("POST", path);
    t.equal(r.status, status, `${path}: ${status}`);
    t.equal(r.body?.code, code, `${path}: ${code}`);
    t.match(r.headers.get("content-type"), /application\/problem\+json/);
  };
  await problem(`/api/v1/terminal/${"0".repeat(32)}`, 404, "agent_not_found");
  await problem(`/api/v1/terminal/${ids.pending}`, 409, "agent_not_approved");
  await problem("/api/v1/terminal/gone-1", 409, "agent_not_connected");
  await problem("/api/v1/terminal/off-1", 409, "terminal_disabled");
  await problem("/api/v1/terminal/web-1?shell=/bin/zsh", 400, "shell_not_allowed");
  await problem("/api/v1/terminal/web-1?cols=0", 400, "invalid_request");
  await problem("/api/v1/terminal/web-1?rows=99999999999", 400, "invalid_request");
  await problem("/api/v1/terminal/web-1?shell=sh", 400, "invalid_request");
  web.child.kill("SIGSTOP"); // connected, but not answering
  try {
    await problem("/api/v1/terminal/web-1", 504, "agent_timeout");
  } finally {
    web.child.kill("SIGCONT");
  }
  const r = await api("GET", "/api/v1/terminal/session/01ARZ3NDEKTSV4RRFFQ69G5FAV");
  t.equal(r.status, 404);
  t.equal(r.body.code, "session_not_found");
});

t.test(
  "kill the terminal service mid-session: the transcript keeps what came before, the session does not stay open",
  async (t) => {
    const o = await open("web-1");
    const a = await attached(o.ws_url);
    a.send("echo before-$((20+22))\r");
    await eventually(() => a.text().includes("before-42"));
    // The bound: a crash loses at most the last second.
    await new Promise((r) => setTimeout(r, 1100));
    await system.kill("terminal", "SIGKILL");
    a.send("echo during-$((3*3)); exit\r");
    t.equal((await a.closed).reason, "exit:0", "the shell still ran and exited while the service was down");
    t.match(a.text(), /during-9/);
    await system.start("terminal");
    const s = await settled(o.session_id);
    t.ok(["failed", "closed"].includes(s.status), `ended ${s.status} (${s.close_reason})`);
    t.type(s.closed_at, "number");
    const cast = readFileSync(join(transcripts, `${o.session_id}.cast`), "utf8");
    t.match(cast, /before-42/, "output received before the kill is in the transcript");
    t.equal(createHash("sha256").update(cast).digest("hex"), s.sha256);
    for (const line of cast.trimEnd().split("\n")) JSON.parse(line);
    t.pass("every line of the transcript parses");
    await eventually(async () => (await api("GET", "/api/v1/status")).body?.services?.terminal === "ok", 20_000);
    const after = await open("web-1");
    const b = await attached(after.ws_url);
    b.send("exit 4\r");
    t.equal((await b.closed).reason, "exit:4", "the restarted service opens sessions again");
  },
);

t.test("no ticket or token in any service's output", async (t) => {
  const out = system.output();
  t.notOk(out.includes(token), "no bearer token logged");
  t.notMatch(out, /ticket=[A-Za-z0-9_-]{20,}/, "no ticket logged");
});
