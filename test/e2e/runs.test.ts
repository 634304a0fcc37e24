import t from "tap";
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ed25519, eventually } from "@orch/kit/testing";
import { cli } from "../../cli/test/helpers/cli.js";
import { startStateStack } from "./lib/state-stack.js";

// Fleet command runs end to end (the acceptance of docs/runs.md): real NATS and Postgres, the services from
// dist/, four real orch-agent processes (two tagged role=web) and orchctl — in-process, and as a
// real process where Ctrl-C matters.
const { linkPort, system, agents, dir } = await startStateStack(t, { name: "runs", keyByte: 6 });

const ORCHCTL = fileURLToPath(new URL("../../cli/dist/main.js", import.meta.url));
const env = { HOME: dir, ORCHCTL_HOME: join(dir, "home"), ORCH_URL: system.url };
const orchctl = (...args: string[]) => cli(args, env);
const pem = join(dir, "admin.pem");
writeFileSync(pem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const login = await orchctl("login", "--key", pem);
if (login.code !== 0) throw new Error(login.stderr);
const token = await system.login(system.admin);

/** Processes on this machine whose command line contains `marker`. */
async function processesWith(marker: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)("ps", ["-eo", "pid,args"]);
  // orchctl's own command line (the real-process test) holds the marker too.
  return stdout.split("\n").filter((l) => l.includes(marker) && !l.includes("ps -eo") && !l.includes(ORCHCTL));
}

const procs: Record<string, ReturnType<typeof agents.spawn>> = {};
for (const [name, role] of [
  ["web-1", "web"],
  ["web-2", "web"],
  ["db-1", "db"],
  ["db-2", "db"],
] as const) {
  const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]);
  const nodeId = await proc.nodeId();
  await eventually(
    async () => (await system.api("GET", `/api/v1/agents/${nodeId}`, { token })).body?.connected === true,
    20_000,
  );
  await system.api("POST", `/api/v1/agents/${nodeId}`, { token, body: { status: "approved", name } });
  await system.api("PUT", `/api/v1/agents/${nodeId}/tags`, { token, body: { tags: { role } } });
  procs[name] = proc;
}

t.test(
  "orchctl run 'role=web' -- sh -c 'hostname; exit 3': both agents stream, 2 failed with 3, exit ≠ 0",
  async (t) => {
    const r = await orchctl("run", "role=web", "--", "sh", "-c", "hostname; exit 3");
    t.equal(r.code, 1, r.stderr);
    const lines = r.stdout.split("\n");
    t.ok(lines.includes(`web-1 | ${hostname()}`), r.stdout);
    t.ok(lines.includes(`web-2 | ${hostname()}`), r.stdout);
    t.notMatch(r.stdout, /db-/, "only the selected agents ran");
    t.match(r.stdout, /NAME\s+STATUS\s+EXIT\s+DURATION\n/);
    t.match(r.stdout, /\nweb-1\s+failed\s+3\s/);
    t.match(r.stdout, /\nweb-2\s+failed\s+3\s/);
    t.match(r.stderr, /run completed: 2 agents \(2 failed\)/);
  },
);

t.test("--json: NDJSON events; output that is not UTF-8 is base64 in JSON, escaped for humans", async (t) => {
  const j = await orchctl("--json", "run", "role=web", "--", "printf", "\\377");
  t.equal(j.code, 0, j.stderr);
  const events = j.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { event: string; data: any });
  t.equal(events[0]!.event, "run");
  t.same(
    events.slice(-2).map((e) => e.event),
    ["summary", "end"],
  );
  t.equal(events.at(-2)!.data.counts.succeeded, 2);
  const outputs = events.filter((e) => e.event === "output").map((e) => e.data);
  t.same(outputs.map((o) => [o.data, o.encoding]).sort(), [
    ["/w==", "base64"],
    ["/w==", "base64"],
  ]);
  const runId = events[0]!.data.id as string;
  const stored = await system.api("GET", `/api/v1/runs/${runId}`, { token });
  t.match((stored.body as any).agents[0], { stdout: "/w==", stdout_encoding: "base64" });

  const h = await orchctl("run", "role=web", "--", "printf", "\\377\\033[31mred\\n");
  t.equal(h.code, 0, h.stderr);
  t.ok(h.stdout.split("\n").includes("web-1 | \\xff\\x1b[31mred"), h.stdout);
  t.notMatch(h.stdout, /\x1b/, "remote bytes never reach the terminal raw");
});

t.test("a selector matching nothing: 200, targets 0, orchctl exits 0", async (t) => {
  const api = await system.api("POST", "/api/v1/runs", {
    token,
    body: { selector: "role=nothing", command: ["true"] },
  });
  t.equal(api.status, 200, api.text);
  t.match(api.body, { targets: 0, status: "completed" });
  const r = await orchctl("run", "role=nothing", "--", "true");
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /no agent matched/);
});

t.test("Ctrl-C cancels the run and leaves no process behind", async (t) => {
  const marker = `marker-${randomBytes(6).toString("hex")}`;
  // A duration no other process on the machine uses, to find the sleep children too.
  const sleep = `sleep 60.${randomBytes(3).readUIntBE(0, 3)}`;
  const child = spawn(process.execPath, [ORCHCTL, "run", "role=web", "--", "sh", "-c", `${sleep}; : ${marker}`], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  t.teardown(() => void child.kill("SIGKILL"));
  await eventually(async () => (await processesWith(marker)).length === 2, 20_000);
  child.kill("SIGINT");
  t.equal(await exited, 130, `${out}\n${err}`);
  t.match(err, /cancelling/);
  t.match(out, /web-1\s+cancelled/);
  t.match(out, /web-2\s+cancelled/);
  await eventually(async () => (await processesWith(marker)).length === 0, 10_000);
  t.same(await processesWith(sleep), [], "the sleep children are gone too");
  const runs = await system.api("GET", "/api/v1/runs?limit=1", { token });
  t.match((runs.body as any).runs[0], { status: "cancelled", counts: { cancelled: 2 } });
});

t.test("an agent SIGKILLed mid-run: its target is lost (or unreachable), the run still finishes", async (t) => {
  const marker = `${20 + Math.random()}`.slice(0, 8);
  const pending = orchctl("--json", "run", "role=web", "--", "sleep", marker);
  await eventually(async () => (await processesWith(`sleep ${marker}`)).length === 2, 20_000);
  await procs["web-2"]!.signal("SIGKILL");
  const r = await pending;
  t.equal(r.code, 1, r.stderr);
  // In-process, the failure's problem document follows the events (the real orchctl exits first).
  const summary = r.stdout
    .split("\n")
    .filter((l) => l.startsWith('{"event"'))
    .map((l) => JSON.parse(l) as { event: string; data: any })
    .find((e) => e.event === "summary")!.data;
  t.equal(summary.status, "completed");
  const byName = Object.fromEntries(summary.agents.map((a: any) => [a.name, a.status]));
  t.equal(byName["web-1"], "succeeded");
  t.match(byName["web-2"], /^(lost|unreachable)$/);
});

t.test("operators: 403 by default; allowed when the gateway is configured so", async (t) => {
  const key = ed25519();
  const created = await system.api("POST", "/api/v1/operators", {
    token,
    body: { name: "olga", public_key: key.publicKeyHex, role: "operator" },
  });
  t.equal(created.status, 201, created.text);
  const opToken = await system.login(key);
  const body = { selector: "role=db", command: ["true"] };
  const refused = await system.api("POST", "/api/v1/runs", { token: opToken, body });
  t.equal(refused.status, 403);
  t.equal((refused.body as any).code, "admin_required");

  await system.kill("gateway", "SIGTERM");
  await system.start("gateway", { ORCH_GATEWAY_OPERATORS_MAY_RUN_COMMANDS: "true" });
  await eventually(
    async () => (await system.api("GET", "/api/v1/status").catch(() => undefined))?.status === 200,
    20_000,
  );
  const allowed = await system.api("POST", "/api/v1/runs", { token: opToken, body });
  t.equal(allowed.status, 202, allowed.text);
  const id = (allowed.body as any).id as string;
  await eventually(async () => {
    const g = await system.api("GET", `/api/v1/runs/${id}`, { token: opToken });
    return (g.body as any).status === "completed" && (g.body as any).counts.succeeded === 2;
  }, 20_000);
  const mine = await system.api("GET", "/api/v1/runs", { token: opToken });
  t.same(
    (mine.body as any).runs.map((x: any) => x.id),
    [id],
    "an operator lists only its own runs",
  );
});
