// The worked example of examples/site (docs/modules.md, "Worked example") run as an operator would:
// orchctl (cli/dist, its own process) uploads the module, sets the value sets from the example's
// files, sets the TLS key secret and creates the assignment; two real orch-agents tagged
// env=staging and env=prod apply it. The "nginx" is a tiny real daemon behind a real LSB init
// script (the agent's SysV provider; systemd is not PID 1 here) that logs each start and each
// reload (SIGHUP), so reload-once is counted, not inferred. Both agents share this machine, so
// the assignment's `root` and `service` parameters are templates over the env tag.
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

const ORCHCTL = fileURLToPath(new URL("../../cli/dist/main.js", import.meta.url));
const SOURCE = fileURLToPath(new URL("../../examples/site/", import.meta.url));
const ENVS = ["staging", "prod"] as const;
type Env = (typeof ENVS)[number];

const usable = process.getuid?.() === 0 && !existsSync("/run/systemd/system") && existsSync("/etc/init.d");
// Not a skip: a machine that cannot run it must say so, or the suite would pass without proving restart-once.
if (!usable) t.fail("needs root, /etc/init.d and no running systemd (the SysV provider is what this proves)");
else await suite();

/** An LSB init script for a sh daemon that appends "start" when it starts and "reload" on SIGHUP. */
function initScript(name: string, run: string): string {
  const pid = join(run, "pid");
  const events = join(run, "events");
  const daemon = `echo $$ > ${pid}; echo start >> ${events}; trap "echo reload >> ${events}" HUP; trap "exit 0" TERM; while :; do sleep 1 & wait $!; done`;
  return [
    "#!/bin/sh",
    "### BEGIN INIT INFO",
    `# Provides:          ${name}`,
    "# Required-Start:",
    "# Required-Stop:",
    "# Default-Start:     2 3 4 5",
    "# Default-Stop:      0 1 6",
    "# Short-Description: orch example-site test daemon",
    "### END INIT INFO",
    `P=${pid}`,
    `running() { [ -s "$P" ] && kill -0 "$(cat "$P")" 2>/dev/null; }`,
    `settle() { i=0; while [ $i -lt 50 ]; do "$@" && return 0; sleep 0.1; i=$((i+1)); done; return 1; }`,
    "stopped() { ! running; }",
    'case "$1" in',
    "  start) running && exit 0",
    `         setsid sh -c '${daemon}' </dev/null >/dev/null 2>&1 &`,
    "         settle running ;;",
    "  stop) running || exit 0",
    `        kill "$(cat "$P")"; settle stopped && rm -f "$P" ;;`,
    '  restart) "$0" stop && "$0" start ;;',
    "  reload) running || exit 7",
    `          kill -HUP "$(cat "$P")" ;;`,
    "  status) running && exit 0; exit 3 ;;",
    '  *) echo "usage: $0 start|stop|restart|reload|status" >&2; exit 2 ;;',
    "esac",
    "",
  ].join("\n");
}

/** The config text each environment must get: the values files say exactly this. */
function expectedConfig(root: string, env: Env, upstreams: readonly string[]): string {
  return [
    "# shop.example.com: written by orch (module site); edits are reverted by the next apply.",
    `error_log ${root}/var/log/nginx/shop.example.com.error.log ${env === "staging" ? "debug" : "warn"};`,
    "",
    "upstream app {",
    ...upstreams.map((u) => `    server ${u};`),
    "}",
    "",
    "server {",
    "    listen 443 ssl;",
    "    server_name shop.example.com;",
    ...(env === "prod" ? ['    add_header Strict-Transport-Security "max-age=31536000" always;'] : []),
    `    ssl_certificate_key ${root}/etc/nginx/tls/shop.example.com.key;`,
    "    location / {",
    "        proxy_pass http://app;",
    "    }",
    "}",
    "",
  ].join("\n");
}

/** The 1-based line of `key:` in one of the example's values files (what origins must name). */
function keyLine(file: string, key: string): number {
  const i = readFileSync(join(SOURCE, "values", file), "utf8")
    .split("\n")
    .findIndex((l) => l.startsWith(`${key}:`));
  if (i < 0) throw new Error(`${key} not in ${file}`);
  return i + 1;
}

interface ResultJson {
  id: string;
  status: string;
  changed: boolean;
  message: string;
  diff: string;
}
interface OperationJson {
  node_name: string;
  status: string;
  summary: Record<string, number>;
  results: ResultJson[];
}

async function suite() {
  const { linkPort, system, agents, dir } = await startStateStack(t, { name: "example-site", keyByte: 6 });
  const service = `orch-t-${randomBytes(3).toString("hex")}`;
  const root = (env: Env) => join(dir, env);
  const run = (env: Env) => join(dir, `run-${env}`);
  // The example as an operator has it after a build: its copy, with a 50 MiB backend binary in files/.
  const EXAMPLE = join(dir, "example");
  cpSync(SOURCE, EXAMPLE, { recursive: true });
  mkdirSync(join(EXAMPLE, "files", "bin"), { recursive: true });
  const backend = randomBytes(50 * 1024 * 1024);
  const backendDigest = `sha256:${createHash("sha256").update(backend).digest("hex")}`;
  writeFileSync(join(EXAMPLE, "files", "bin", "shop-backend"), backend);
  const backendPath = (e: Env) => join(root(e), "opt/shop/shop-backend");
  const sentBytes = () =>
    system
      .output()
      .split("\n")
      .filter((l) => l.includes("blobs sent to the agent's cache"))
      .map((l) => Number(/"bytes":(\d+)/.exec(l)?.[1] ?? 0))
      .reduce((a, b) => a + b, 0);

  for (const env of ENVS) {
    const script = `/etc/init.d/${service}-${env}`;
    mkdirSync(run(env));
    writeFileSync(script, initScript(`${service}-${env}`, run(env)), { mode: 0o755 });
    t.teardown(() => {
      spawnSync(script, ["stop"]);
      try {
        process.kill(Number(readFileSync(join(run(env), "pid"), "utf8")), "SIGKILL");
      } catch {
        // already gone
      }
      rmSync(script, { force: true });
    });
  }
  const events = (env: Env, word: "start" | "reload") => {
    const f = join(run(env), "events");
    return existsSync(f)
      ? readFileSync(f, "utf8")
          .split("\n")
          .filter((l) => l === word).length
      : 0;
  };

  // Every byte orchctl prints, to check that none of it is the secret.
  let printed = "";
  const env = { ...process.env, HOME: dir, ORCHCTL_HOME: join(dir, "home"), ORCH_URL: system.url, NO_COLOR: "1" };
  function orchctl(args: string[], stdin = ""): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const p = spawn(process.execPath, [ORCHCTL, ...args], { env, cwd: EXAMPLE, stdio: ["pipe", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      p.stdout.on("data", (d) => (stdout += d));
      p.stderr.on("data", (d) => (stderr += d));
      p.on("error", reject);
      p.on("close", (code) => {
        printed += stdout + stderr;
        resolve({ code: code ?? -1, stdout, stderr });
      });
      p.stdin.end(stdin);
    });
  }
  const pem = join(dir, "admin.pem");
  writeFileSync(pem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  const login = await orchctl(["login", "--key", pem]);
  if (login.code !== 0) throw new Error(login.stderr);

  const token = await system.login(system.admin);
  for (const e of ENVS) {
    const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]);
    const nodeId = await proc.nodeId();
    const get = async () => (await system.api("GET", `/api/v1/agents/${nodeId}`, { token })).body;
    await eventually(async () => (await get())?.connected === true, 30_000);
    const approve = await orchctl(["agents", "approve", nodeId, "--name", `web-${e}`]);
    if (approve.code !== 0) throw new Error(approve.stderr);
    const tag = await orchctl(["agents", "tag", `web-${e}`, `env=${e}`, "app=shop"]);
    if (tag.code !== 0) throw new Error(tag.stderr);
    // An agent not yet reporting that it understands triggers would fail the apply (agent_too_old).
    await eventually(
      async () => ((await get())?.attributes?.state_features ?? "").split(",").includes("triggers"),
      30_000,
    );
  }

  const secretBody = randomBytes(48).toString("base64");
  const secret = `-----BEGIN PRIVATE KEY-----\n${secretBody}\n-----END PRIVATE KEY-----\n`;
  const initial = {
    staging: ["10.1.0.11:8080", "10.1.0.12:8080"],
    prod: ["10.2.0.11:8080", "10.2.0.12:8080", "10.2.0.13:8080"],
  };
  const configPath = (e: Env) => join(root(e), "etc/nginx/sites-enabled/shop.example.com.conf");
  const keyPath = (e: Env) => join(root(e), "etc/nginx/tls/shop.example.com.key");
  const applyJson = async (kind: "apply" | "plan") => {
    const r = await orchctl(["--json", "assignments", kind, "site"]);
    t.equal(r.code, 0, `${kind}: ${r.stderr}`);
    const ops = (JSON.parse(r.stdout) as { results: OperationJson[] }).results;
    return Object.fromEntries(ops.map((o) => [o.node_name.replace(/^web-/, ""), o])) as Record<Env, OperationJson>;
  };
  const byId = (op: OperationJson) => Object.fromEntries(op.results.map((r) => [r.id, r]));

  t.test("set up as the README says: module, values, secret, assignment with --param", async (t) => {
    const push = await orchctl(["modules", "push", "."]);
    t.equal(push.code, 0, push.stderr);
    t.match(push.stdout, /Uploaded module site \(7 resources, sha256 [0-9a-f]{12}\) with 1 file/);
    for (const [set, flags] of [
      ["defaults", []],
      ["staging", ["--selector", "env=staging", "--priority", "10"]],
      ["prod", ["--selector", "env=prod", "--priority", "10"]],
    ] as const) {
      const r = await orchctl(["values", "set", set, "-f", `values/${set}.yaml`, ...flags]);
      t.equal(r.code, 0, `values set ${set}: ${r.stderr}`);
    }
    const s = await orchctl(["secrets", "set", "site_tls_key", "--tag", "app=shop", "--keep-newline"], secret);
    t.equal(s.code, 0, s.stderr);
    const a = await orchctl([
      "assignments",
      "create",
      "site",
      "--selector",
      "app=shop",
      "-m",
      "site",
      "--params-file",
      "parameters.yaml",
      "--param",
      `root=${dir}/{{ tags.env }}`,
      "--param",
      `service=${service}-{{ tags.env }}`,
    ]);
    t.equal(a.code, 0, a.stderr);
  });

  t.test("the first apply writes each environment's config exactly as its values say", async (t) => {
    const ops = await applyJson("apply");
    for (const e of ENVS) {
      t.equal(ops[e].status, "succeeded", e);
      t.equal(readFileSync(configPath(e), "utf8"), expectedConfig(root(e), e, initial[e]), `${e} config`);
      t.equal(byId(ops[e]).server!.status, "changed", "the service was started");
      t.match(
        byId(ops[e]).server!.message,
        /not reloaded: started by this operation \(triggered by site\/config and site\/tls_key\)/,
      );
      t.equal(events(e, "start"), 1, `${e} started once`);
      t.equal(events(e, "reload"), 0, `${e}: started, not reloaded on top`);
      const bin = readFileSync(backendPath(e));
      t.equal(
        `sha256:${createHash("sha256").update(bin).digest("hex")}`,
        backendDigest,
        `${e}: the 50 MiB backend, exact`,
      );
      t.equal(statSync(backendPath(e)).mode & 0o777, 0o755);
    }
    t.equal(sentBytes(), 2 * backend.length, "the blob went once to each agent");
  });

  t.test("values explain names the set and line each agent's upstreams came from", async (t) => {
    const st = await orchctl(["values", "explain", "web-staging", "upstreams"]);
    t.equal(st.code, 0, st.stderr);
    t.match(st.stdout, `upstreams = ${JSON.stringify(initial.staging)}`);
    t.match(st.stdout, `  from: staging (priority 10), line ${keyLine("staging.yaml", "upstreams")}\n`);
    t.match(st.stdout, `    defaults, line ${keyLine("defaults.yaml", "upstreams")}\n`);
    const pr = await orchctl(["values", "explain", "web-prod", "upstreams"]);
    t.equal(pr.code, 0, pr.stderr);
    t.match(pr.stdout, `upstreams = ${JSON.stringify(initial.prod)}`);
    t.match(pr.stdout, `  from: prod (priority 10), line ${keyLine("prod.yaml", "upstreams")}\n`);
    const level = await orchctl(["values", "explain", "web-prod", "log_level"]);
    t.match(
      level.stdout,
      `  from: defaults, line ${keyLine("defaults.yaml", "log_level")}\n`,
      "prod keeps the default",
    );
  });

  t.test("the TLS key file is mode 0600 and holds the secret", async (t) => {
    for (const e of ENVS) {
      t.equal(statSync(keyPath(e)).mode & 0o777, 0o600, `${e} key mode`);
      t.equal(readFileSync(keyPath(e), "utf8"), secret, `${e} key content`);
    }
  });

  t.test("a second apply changes nothing and reloads nothing", async (t) => {
    const ops = await applyJson("apply");
    for (const e of ENVS) {
      t.equal(ops[e].summary.changed ?? 0, 0, `${e}: nothing changed`);
      t.same(
        ops[e].results.filter((r) => r.status !== "ok").map((r) => r.id),
        [],
      );
      t.equal(events(e, "reload"), 0, `${e}: no reload`);
      t.equal(events(e, "start"), 1, `${e}: no restart`);
    }
    t.equal(sentBytes(), 2 * backend.length, "no byte of the backend sent again");
  });

  t.test(
    "one changed upstream in prod: the plan shows a one-line diff and would reload; the apply reloads once",
    async (t) => {
      const changed = readFileSync(join(EXAMPLE, "values/prod.yaml"), "utf8").replace(
        "10.2.0.13:8080",
        "10.2.0.14:8080",
      );
      t.not(changed, readFileSync(join(EXAMPLE, "values/prod.yaml"), "utf8"));
      writeFileSync(join(dir, "prod.yaml"), changed);
      const set = await orchctl(["values", "set", "prod", "-f", join(dir, "prod.yaml")]);
      t.equal(set.code, 0, set.stderr);

      const human = await orchctl(["assignments", "plan", "site"]);
      t.equal(human.code, 0, human.stderr);
      t.match(human.stdout, `would reload ${service}-prod: site/config changes`);
      t.notMatch(human.stdout, `would reload ${service}-staging`);

      const plan = await applyJson("plan");
      const prod = byId(plan.prod);
      t.same(
        plan.prod.results.filter((r) => r.changed).map((r) => r.id),
        ["config", "server"],
      );
      const edits = prod.config!.diff.split("\n").filter((l) => /^[-+](?![-+]{2} )/.test(l));
      t.same(edits, ["-    server 10.2.0.13:8080;", "+    server 10.2.0.14:8080;"], "a one-line diff");
      t.equal(prod.server!.message, `would reload ${service}-prod: site/config changes`);
      t.equal(plan.staging.summary.changed ?? 0, 0, "staging would not change");
      t.equal(events("prod", "reload"), 0, "the plan reloaded nothing");

      const ops = await applyJson("apply");
      t.equal(byId(ops.prod).server!.message, "reloaded: triggered by site/config");
      await eventually(() => events("prod", "reload") === 1, 10_000);
      t.equal(events("prod", "reload"), 1, "prod reloaded exactly once");
      t.equal(events("prod", "start"), 1, "and not restarted");
      t.equal(events("staging", "reload"), 0, "staging not reloaded");
      t.equal(
        readFileSync(configPath("prod"), "utf8"),
        expectedConfig(root("prod"), "prod", ["10.2.0.11:8080", "10.2.0.12:8080", "10.2.0.14:8080"]),
      );
      t.equal(readFileSync(configPath("staging"), "utf8"), expectedConfig(root("staging"), "staging", initial.staging));
    },
  );

  t.test("no response or plan printed the secret", async (t) => {
    t.ok(printed.length > 0);
    t.notOk(printed.includes(secretBody), "the key's body appears in no orchctl output");
  });
}
