import t from "tap";
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pty from "node-pty";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";

// orchctl ssh and orchctl terminal against the real system (built CLI in a real PTY, real agent).
const ORCHCTL = fileURLToPath(new URL("../../cli/dist/main.js", import.meta.url));
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const transcripts = mkdtempSync(join(tmpdir(), "orch-cli-transcripts-"));
t.teardown(() => rmSync(transcripts, { recursive: true, force: true }));
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "terminal", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_TERMINAL_TRANSCRIPT_DIR: transcripts,
  },
});
const agents = agentPool();
t.teardown(async () => {
  await agents.stop();
  rmSync(home, { recursive: true, force: true });
});
const adminToken = await system.login(system.admin);
const web = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/bash"]);
const webId = await web.nodeId();
await eventually(
  async () => (await system.api("GET", `/api/v1/agents/${webId}`, { token: adminToken })).body?.connected === true,
  20_000,
);
await system.api("POST", `/api/v1/agents/${webId}`, { token: adminToken, body: { status: "approved", name: "web-1" } });

const home = mkdtempSync(join(tmpdir(), "orchctl-home-"));
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  HOME: home,
  ORCHCTL_HOME: join(home, "orchctl"),
  TERM: "xterm",
};
const run = (args: string[], input?: string) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const c = spawn(process.execPath, [ORCHCTL, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d: Buffer) => (stdout += d));
    c.stderr.on("data", (d: Buffer) => (stderr += d));
    c.on("close", (code) => resolve({ code, stdout, stderr }));
    c.stdin.end(input ?? "");
  });
await promisify(execFile)(process.execPath, [ORCHCTL, "keygen"], { env });
const pub = readFileSync(join(home, "orchctl", "id_ed25519.pub"), "utf8").trim();
await system.api("POST", "/api/v1/operators", {
  token: adminToken,
  body: { name: "dave", public_key: pub, role: "operator" },
});
const loggedIn = await run(["login", "--server", system.url]);
if (loggedIn.code !== 0) throw new Error(`login: ${loggedIn.stderr}`);

let sessionId = "";

t.test("orchctl ssh: raw mode, window size, SIGWINCH resize, remote exit code", async (t) => {
  const p = pty.spawn(process.execPath, [ORCHCTL, "ssh", "web-1"], { cols: 90, rows: 33, cwd: home, env });
  let out = "";
  p.onData((d) => (out += d));
  const exited = new Promise<number>((r) => p.onExit(({ exitCode }) => r(exitCode)));
  const seen = (re: RegExp) =>
    eventually(() => re.test(out), 15_000).catch((err: Error) => {
      t.comment(`terminal so far: ${JSON.stringify(out.slice(-2000))}`);
      throw err;
    });

  p.write("stty size\r");
  await seen(/33 90/);
  t.pass("the remote PTY has the local window size");
  p.resize(100, 40); // the kernel sends orchctl SIGWINCH
  await eventually(async () => {
    p.write("stty size\r");
    await new Promise((r) => setTimeout(r, 300));
    return /40 100/.test(out);
  }, 15_000);
  t.pass("SIGWINCH is forwarded as a resize");
  p.write("sleep 100; echo not-interrupted\r");
  await seen(/sleep 100; echo not-interrupted\r\n/);
  await new Promise((r) => setTimeout(r, 500)); // let sleep start: the tty drops typed-ahead input on ^C
  p.write("\x03"); // raw mode: Ctrl-C goes to the remote shell, not to orchctl
  await seen(/\^C/);
  p.write("echo alive-$((1+1))\r");
  await seen(/alive-2/);
  t.notMatch(out, /\nnot-interrupted/, "the remote sleep was interrupted");
  t.notMatch(out, /\r\r\n/, "no local LF → CRLF translation on top of the remote one (-opost)");
  t.pass("Ctrl-C reached the remote shell; orchctl kept running");
  p.write("exit 3\r");
  t.equal(await exited, 3, "orchctl exits with the remote exit code");

  const list = JSON.parse((await run(["terminal", "list", "--json"])).stdout);
  sessionId = list.sessions[0].session_id;
  t.equal(list.sessions[0].node_name, "web-1");
});

t.test("orchctl terminal show and transcript (file and stdout), verified against the stored SHA-256", async (t) => {
  const show = await eventually(async () => {
    const s = JSON.parse((await run(["terminal", "show", sessionId, "--json"])).stdout);
    return s.status === "closed" ? s : undefined;
  });
  t.equal(show.exit_code, 3);
  const file = join(home, "s.cast");
  const dl = await run(["terminal", "transcript", sessionId, "-o", file, "--json"]);
  t.equal(dl.code, 0, dl.stderr);
  const doc = JSON.parse(dl.stdout);
  t.equal(doc.verified, true);
  t.equal(doc.sha256, show.sha256);
  t.match(readFileSync(file, "utf8"), /alive-2/);
  const stdout = await run(["terminal", "transcript", sessionId]);
  t.equal(stdout.stdout, readFileSync(file, "utf8"), "`> file.cast` gives the same bytes");
  const human = await run(["terminal", "show", sessionId]);
  t.match(human.stdout, /status:\s+closed/);
});

t.test("piped input: the end of input ends the shell; exit code and output come back", async (t) => {
  const r = await run(["ssh", "web-1"], "echo piped-$((2+3)); exit 7\n");
  t.equal(r.code, 7, r.stderr);
  t.match(r.stdout, /piped-5/);
});

t.test("orchctl ssh --json opens without attaching; orchctl terminal close ends it", async (t) => {
  const opened = JSON.parse((await run(["ssh", "web-1", "--json"])).stdout);
  t.match(opened, { session_id: /^[0-9A-Z]{26}$/, ws_url: /^ws:\/\// });
  const closed = await run(["terminal", "close", opened.session_id, "--json"]);
  t.equal(closed.code, 0, closed.stderr);
  t.match(JSON.parse(closed.stdout), { status: "closed", close_reason: "closed_by_operator" });
  const refused = await run(["ssh", "no-such-agent"]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /agent_not_found/);
});
