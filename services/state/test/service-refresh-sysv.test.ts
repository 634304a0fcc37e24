import t from "tap";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentStateService, type ResourceResult } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, startNats } from "@orch/kit/testing";
import { agentPool, agentsClient, startAgentsService } from "../../agents/test/harness.js";
import { tooOldFor } from "../src/engine/agent-features.js";
import { renderResources } from "../src/engine/render.js";
import { parseModule } from "../src/module/parse.js";

// Restart-once proven against a real service manager: a real LSB init script in /etc/init.d for a
// tiny real daemon (a sh loop that appends "start" to a file when it starts and "reload" on
// SIGHUP), a real orch-agent process (agent/dist) behind the agents service, and modules parsed
// and rendered by the state service's own code. The agent uses its SysV provider because systemd
// is not PID 1 here; where it is, or without root, the test fails (it has nothing to prove there).
const usable = process.getuid?.() === 0 && !existsSync("/run/systemd/system") && existsSync("/etc/init.d");
// Not a skip: a machine that cannot run it must say so, or the suite would pass without proving restart-once.
if (!usable) t.fail("needs root, /etc/init.d and no running systemd (the SysV provider is what this proves)");
else await suite();

async function suite() {
  const name = `orch-t-${Math.random().toString(36).slice(2, 8)}`;
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const script = `/etc/init.d/${name}`;
  const events = join(dir, "events");
  const pidFile = join(dir, "pid");

  // The daemon writes its own pid, then "start"; `wait` returns at once on SIGHUP, so a reload is logged promptly.
  const daemon = `echo $$ > ${pidFile}; echo start >> ${events}; trap "echo reload >> ${events}" HUP; trap "exit 0" TERM; while :; do sleep 1 & wait $!; done`;
  writeFileSync(
    script,
    [
      `#!/bin/sh`,
      `### BEGIN INIT INFO`,
      `# Provides:          ${name}`,
      `# Required-Start:`,
      `# Required-Stop:`,
      `# Default-Start:     2 3 4 5`,
      `# Default-Stop:      0 1 6`,
      `# Short-Description: orch test daemon`,
      `### END INIT INFO`,
      `P=${pidFile}`,
      `running() { [ -s "$P" ] && kill -0 "$(cat "$P")" 2>/dev/null; }`,
      `settle() { i=0; while [ $i -lt 50 ]; do "$@" && return 0; sleep 0.1; i=$((i+1)); done; return 1; }`,
      `stopped() { ! running; }`,
      `case "$1" in`,
      `  start) running && exit 0`,
      `         setsid sh -c '${daemon}' </dev/null >/dev/null 2>&1 &`,
      `         settle running ;;`,
      `  stop) running || exit 0`,
      `        kill "$(cat "$P")"; settle stopped && rm -f "$P" ;;`,
      `  restart) "$0" stop && "$0" start ;;`,
      `  reload) running || exit 7`,
      `          kill -HUP "$(cat "$P")" ;;`,
      `  status) running && exit 0; exit 3 ;;`,
      `  *) echo "usage: $0 start|stop|restart|reload|status" >&2; exit 2 ;;`,
      `esac`,
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  t.teardown(() => {
    spawnSync(script, ["stop"]);
    try {
      process.kill(Number(readFileSync(pidFile, "utf8")), "SIGKILL");
    } catch {
      // already gone
    }
    spawnSync("update-rc.d", [name, "remove"]);
    rmSync(script, { force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  const lines = (word: string) =>
    existsSync(events)
      ? readFileSync(events, "utf8")
          .split("\n")
          .filter((l) => l === word).length
      : 0;

  const nats = await startNats({ owner: t });
  const db = await createTestDatabase({ owner: t });
  const svc = await startAgentsService(nats, db);
  t.teardown(() => svc.stop());
  const agents = agentPool();
  t.teardown(() => agents.stop());
  const nc = await nats.connect("state-test");
  const { c, as } = agentsClient(nc);

  const agent = agents.spawn(["--server", svc.server]);
  const nodeId = await agent.nodeId();
  await eventually(async () => (await c.getAgent({ id: nodeId }, as).catch(() => undefined))?.connected, 30_000);
  await c.setApproval({ nodeId, status: "approved", name: "sysv-1" }, as);
  const info = await eventually(async () => {
    const a = await c.getAgent({ id: nodeId }, as);
    return a.attributes.state_features ? a : undefined;
  }, 30_000);
  const state = rpcClient(nc, "", AgentStateService, { timeoutMs: 120_000, subjectBase: `orch.agent.${nodeId}` });

  interface Site {
    conf?: string;
    site?: string;
    /** Where conf is written (a path under a file makes it fail). */
    confPath?: string;
    refresh?: "restart" | "reload";
    /** watch: conf (requires + notify) rather than conf notifying the service (notify only). */
    watch?: boolean;
  }
  const moduleText = (s: Site) =>
    [
      "version: 2",
      "name: web",
      "resources:",
      `  - { id: conf, type: file, path: "${s.confPath ?? join(dir, "app.conf")}", content: "${s.conf ?? "port=80"}\\n"${s.watch === false ? ", notify: app" : ""} }`,
      `  - { id: site, type: file, path: "${join(dir, "site.conf")}", content: "${s.site ?? "root=/srv"}\\n", notify: app }`,
      "  - id: app",
      "    type: service",
      `    name: ${name}`,
      "    state: running",
      `    refresh: ${s.refresh ?? "restart"}`,
      ...(s.watch === false ? [] : ["    watch: conf"]),
      `  - { id: reindex, type: exec, command: "echo run >> ${join(dir, "reindex")}", onchanges: site }`,
      "",
    ].join("\n");

  /** Parsed and rendered as the state service does, checked against the agent's features, then executed. */
  async function run(mode: "plan" | "apply", s: Site = {}) {
    const parsed = parseModule(moduleText(s), "web");
    const resources = renderResources([{ name: "web", sha256: "x", parsed }], { attributes: {}, tags: {} }, new Map());
    if (tooOldFor(resources, { name: info.name, nodeId, attributes: info.attributes }))
      throw new Error("agent refused");
    const res = await state.execute({ operationId: "", mode, resources, mask: [] });
    return Object.fromEntries(res.results.map((r) => [r.id, r])) as Record<string, ResourceResult>;
  }
  const reindexRuns = () =>
    existsSync(join(dir, "reindex")) ? readFileSync(join(dir, "reindex"), "utf8").length / 4 : 0;

  t.test("the real agent says it understands triggers", async (t) => {
    t.ok(
      info.attributes.state_features?.split(",").includes("triggers"),
      `features: ${info.attributes.state_features}`,
    );
  });

  t.test("first apply starts the stopped service, and does not restart it on top", async (t) => {
    const plan = await run("plan");
    t.equal(plan.app!.status, "changed");
    t.match(plan.app!.diff, /^start: inactive -> active$/m);
    t.notMatch(plan.app!.diff, /restart/, "a service the operation starts is not also restarted");
    t.equal(plan.app!.message, "would not restart: this operation would start it (triggered by web/conf and web/site)");
    t.equal(lines("start"), 0, "the plan started nothing");

    const r = await run("apply");
    t.same(
      Object.values(r).map((x) => [x.id, x.status]),
      [
        ["conf", "changed"],
        ["site", "changed"],
        ["app", "changed"],
        ["reindex", "changed"],
      ],
    );
    t.match(
      r.app!.message,
      /^start, not restarted: started by this operation \(triggered by web\/conf and web\/site\)$/,
    );
    t.equal(r.app!.observed!.manager, "sysv");
    t.equal(r.app!.observed!.active, "active");
    t.equal(lines("start"), 1, "started once");
    t.equal(reindexRuns(), 1, "the exec site notifies ran");
  });

  t.test("an apply with no change restarts nothing and runs no onchanges exec", async (t) => {
    const r = await run("apply");
    t.same(
      Object.values(r).map((x) => [x.id, x.status]),
      [
        ["conf", "ok"],
        ["site", "ok"],
        ["app", "ok"],
        ["reindex", "ok"],
      ],
    );
    t.equal(r.reindex!.message, "not run: none of web/site changed");
    t.equal(lines("start"), 1, "no restart");
    t.equal(reindexRuns(), 1);
    const plan = await run("plan");
    t.notOk(plan.app!.changed, "a plan of no change says nothing about a restart");
    t.equal(plan.app!.diff, "");
  });

  t.test("the plan says would restart; the apply restarts exactly once for two changed triggers", async (t) => {
    const change = { conf: "port=81", site: "root=/srv/b" };
    const plan = await run("plan", change);
    t.equal(plan.app!.status, "changed");
    t.equal(plan.app!.message, `would restart ${name}: web/conf and web/site change`);
    t.equal(plan.app!.diff, "restart: triggered by web/conf and web/site\n");
    t.equal(plan.reindex!.status, "changed", "the exec would run");
    t.equal(lines("start"), 1, "the plan restarted nothing");
    t.equal(readFileSync(join(dir, "app.conf"), "utf8"), "port=80\n", "nor wrote anything");

    const r = await run("apply", change);
    t.equal(r.app!.status, "changed");
    t.equal(r.app!.message, "restarted: triggered by web/conf and web/site");
    t.equal(lines("start"), 2, "one restart: one new start");
    t.equal(reindexRuns(), 2);

    const again = await run("apply", change);
    t.equal(again.app!.status, "ok");
    t.equal(lines("start"), 2, "and none on the next apply");
  });

  t.test("refresh: reload sends SIGHUP once instead of restarting", async (t) => {
    const change = { conf: "port=82", site: "root=/srv/b", refresh: "reload" as const };
    const plan = await run("plan", change);
    t.equal(plan.app!.message, `would reload ${name}: web/conf changes`);
    const r = await run("apply", change);
    t.equal(r.app!.message, "reloaded: triggered by web/conf");
    await eventually(() => lines("reload") === 1, 10_000);
    t.equal(lines("reload"), 1, "one reload");
    t.equal(lines("start"), 2, "no restart");
  });

  t.test("a failed trigger restarts nothing (watch: skipped; notify only: enforced, not restarted)", async (t) => {
    const bad = join(dir, "app.conf", "nested");
    const watched = await run("apply", { confPath: bad, site: "root=/srv/c" });
    t.equal(watched.conf!.status, "failed");
    t.equal(watched.site!.status, "changed");
    t.equal(watched.app!.status, "skipped", "watch requires conf");
    t.match(watched.app!.message, /requires web\/conf, which is failed/);

    const notified = await run("apply", { confPath: bad, site: "root=/srv/d", watch: false });
    t.equal(notified.app!.status, "ok");
    t.match(notified.app!.message, /not refreshed: web\/conf is failed/);
    t.equal(lines("start"), 2, "no restart either way");
    t.equal(lines("reload"), 1);
  });

  t.test("enabled goes through update-rc.d", async (t) => {
    t.ok(existsSync("/usr/sbin/update-rc.d"), "Debian's update-rc.d (init-system-helpers) is installed");
    const res = (enabled: boolean) => ({
      id: "boot",
      module: "web",
      type: "service",
      spec: { name, enabled },
      requires: [],
    });
    const plan = await state.execute({ mode: "plan", resources: [res(true)] });
    t.equal(plan.results[0]!.diff, "enable: disabled -> enabled\n");
    const apply = await state.execute({ mode: "apply", resources: [res(true)] });
    t.equal(apply.results[0]!.status, "changed", `${apply.results[0]!.message} ${apply.results[0]!.stderr}`);
    t.ok(
      readdirSync("/etc/rc2.d").some((f) => new RegExp(`^S\\d\\d${name}$`).test(f)),
      "an S link in runlevel 2",
    );
    const again = await state.execute({ mode: "apply", resources: [res(true)] });
    t.equal(again.results[0]!.status, "ok");
    const off = await state.execute({ mode: "apply", resources: [res(false)] });
    t.equal(off.results[0]!.status, "changed", off.results[0]!.message);
    t.notOk(
      readdirSync("/etc/rc2.d").some((f) => new RegExp(`^S\\d\\d${name}$`).test(f)),
      "no S link any more",
    );
  });
}
