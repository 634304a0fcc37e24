import t from "tap";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunResult } from "../src/state/proc.js";
import type { SystemdManager } from "../src/state/providers/service.js";
import { systemdUnitProvider } from "../src/state/providers/systemd-unit.js";
import { SpecError, UnsupportedError, type ProviderContext } from "../src/state/types.js";

// The systemd_unit provider's sequence (file, daemon-reload, enable/start, one restart) on real
// files. This machine's PID 1 is not systemd, so systemd's side is a small model of it that loads
// unit files only on daemon-reload, as systemd does; the SysV provider proves restart-once against
// real services (state-triggers, example-site).

const dir = mkdtempSync(join(tmpdir(), "orch-units-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const ok = (): RunResult => ({
  code: 0,
  signal: null,
  stdout: "",
  stderr: "",
  stdoutBytes: Buffer.alloc(0),
  stderrBytes: Buffer.alloc(0),
  stdoutTruncated: false,
  stderrTruncated: false,
  timedOut: false,
  cancelled: false,
  durationMs: 1,
});

/** systemd as the provider sees it: units known after daemon-reload, their activity and enablement. */
function model() {
  const calls: string[] = [];
  const loaded = new Map<string, { active: string; enabled: string }>();
  const m: SystemdManager = {
    kind: "systemd",
    async inspect(name) {
      const u = loaded.get(name);
      if (!u) throw new SpecError(`unit ${name} not found`);
      return { ...u };
    },
    async change(verb, name) {
      calls.push(`${verb} ${name}`);
      const u = loaded.get(name);
      if (!u) return { run: { ...ok(), code: 5, stderr: `Unit ${name} not found.` }, command: `systemctl ${verb}` };
      if (verb === "start" || verb === "restart") u.active = "active";
      if (verb === "stop") u.active = "inactive";
      if (verb === "enable") u.enabled = "enabled";
      if (verb === "disable") u.enabled = "disabled";
      return { run: ok(), command: `systemctl ${verb}` };
    },
    async daemonReload() {
      calls.push("daemon-reload");
      const files = new Set(readdirSync(dir));
      for (const f of files) if (!loaded.has(f)) loaded.set(f, { active: "inactive", enabled: "disabled" });
      for (const name of loaded.keys()) if (!files.has(name)) loaded.delete(name);
      return ok();
    },
  };
  return { m, calls, loaded };
}

const ctx = (refresh?: string[]): ProviderContext => ({
  deadline: Date.now() + 30_000,
  ...(refresh ? { refresh } : {}),
});
const unit = (exec: string) =>
  `[Unit]\nDescription=web\n\n[Service]\nExecStart=${exec}\n\n[Install]\nWantedBy=multi-user.target\n`;

t.test("a new unit: file, daemon-reload, enable, start; a second apply does nothing", async (t) => {
  const { m, calls } = model();
  const p = systemdUnitProvider({ unitDir: dir, hasSystemd: async () => true, manager: m });
  const spec = { name: "web.service", content: unit("/usr/bin/web"), state: "running", enabled: true };
  const plan = await p.check(spec, ctx());
  t.equal(plan.changed, true);
  t.match(plan.diff, /# create file \(mode 0644\)/);
  t.match(plan.diff, /\+ExecStart=\/usr\/bin\/web/);
  t.match(plan.diff, /daemon-reload: unit file changed\nenable: disabled -> enabled\nstart: inactive -> active\n$/);
  t.same(calls, [], "check changed nothing");
  t.notOk(existsSync(join(dir, "web.service")));

  const applied = await p.apply(spec, ctx());
  t.equal(applied.changed, true);
  t.same(calls, ["daemon-reload", "enable web.service", "start web.service"]);
  t.match(readFileSync(join(dir, "web.service"), "utf8"), /^# Managed by orch \(systemd_unit resource\)/);
  t.equal(applied.observed.active, "active");

  calls.length = 0;
  const again = await p.apply(spec, ctx());
  t.equal(again.changed, false);
  t.same(calls, [], "nothing reloaded, nothing restarted");
});

t.test("a changed file restarts the running unit once, also when a trigger asks", async (t) => {
  const { m, calls } = model();
  const p = systemdUnitProvider({ unitDir: dir, hasSystemd: async () => true, manager: m });
  const v1 = { name: "api.service", content: unit("/usr/bin/api --v1"), state: "running" };
  await p.apply(v1, ctx());
  calls.length = 0;
  const v2 = { ...v1, content: unit("/usr/bin/api --v2"), refresh: "reload" };
  const plan = await p.check(v2, ctx(["site/config"]));
  t.equal(plan.message, "would restart api.service: its unit file changed; triggered by site/config");
  const applied = await p.apply(v2, ctx(["site/config"]));
  t.same(calls, ["daemon-reload", "restart api.service"], "one restart (a reload would keep the old ExecStart)");
  t.match(applied.message, /restarted: its unit file changed; triggered by site\/config/);

  calls.length = 0;
  await p.apply(v2, ctx(["site/config"]));
  t.same(calls, ["reload api.service"], "an unchanged unit is reloaded as it asks when triggered");

  calls.length = 0;
  await p.apply({ ...v2, content: unit("/usr/bin/api --v3"), state: "stopped" }, ctx());
  t.same(calls, ["daemon-reload", "stop api.service"], "a unit asked to stop is not restarted first");
});

t.test("absent: stop and disable while it loads, then remove the file and reload", async (t) => {
  const { m, calls, loaded } = model();
  const p = systemdUnitProvider({ unitDir: dir, hasSystemd: async () => true, manager: m });
  await p.apply({ name: "old.service", content: unit("/bin/true"), state: "running", enabled: true }, ctx());
  calls.length = 0;
  const plan = await p.check({ name: "old.service", state: "absent" }, ctx());
  t.match(plan.diff, /# remove file/);
  t.match(plan.diff, /disable: enabled -> disabled\nstop: active -> inactive\ndaemon-reload: unit file removed\n$/);
  const gone = await p.apply({ name: "old.service", state: "absent" }, ctx());
  t.equal(gone.changed, true);
  t.same(calls, ["disable old.service", "stop old.service", "daemon-reload"]);
  t.notOk(existsSync(join(dir, "old.service")));
  t.notOk(loaded.has("old.service"));
  calls.length = 0;
  t.equal((await p.apply({ name: "old.service", state: "absent" }, ctx())).changed, false);
  t.same(calls, []);
});

t.test("refusals: no systemd, a bad name, a missing content", async (t) => {
  const none = systemdUnitProvider({ unitDir: dir, hasSystemd: async () => false });
  await t.rejects(none.check({ name: "web.service", content: "x" }, ctx()), UnsupportedError);
  const p = systemdUnitProvider({ unitDir: dir, hasSystemd: async () => true, manager: model().m });
  await t.rejects(p.check({ name: "web", content: "x" }, ctx()), /must be a unit file name/);
  await t.rejects(p.check({ name: "../x.service", content: "x" }, ctx()), /must be a unit file name/);
  await t.rejects(p.check({ name: "web.service" }, ctx()), /"content" is required unless state is absent/);
});
