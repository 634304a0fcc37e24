import { lstat } from "node:fs/promises";
import { join } from "node:path";
import { isSystemdUnitName, SYSTEMD_UNIT_RULE } from "@orch/contracts";
import { onlyKeys, optBool, optStr, str } from "../spec.js";
import {
  SpecError,
  UnsupportedError,
  type ApplyResult,
  type Provider,
  type ProviderContext,
  type Spec,
} from "../types.js";
import { applyFiles, checkFiles, managedHeader, type OwnedFile } from "./owned-files.js";
import {
  changes,
  isRunning,
  refreshOf,
  renderSteps,
  systemdBooted,
  systemdManager,
  type Cur,
  type SystemdManager,
  type Want as ServiceWant,
} from "./service.js";

const FIELDS = ["name", "content", "state", "enabled", "refresh"];

export interface SystemdUnitOptions {
  /** Where unit files are written (default /etc/systemd/system, the administrator's directory). */
  unitDir?: string | undefined;
  hasSystemd?: () => Promise<boolean>;
  manager?: SystemdManager;
}

interface Want extends ServiceWant {
  absent: boolean;
  file: OwnedFile;
}

function parse(spec: Spec, unitDir: string): Want {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  if (!isSystemdUnitName(name)) throw new SpecError(`field "name" ${SYSTEMD_UNIT_RULE}`);
  const s = optStr(spec, "state");
  if (s !== undefined && s !== "running" && s !== "stopped" && s !== "absent")
    throw new SpecError(`field "state" must be one of running, stopped, absent`);
  const refresh = optStr(spec, "refresh") ?? "restart";
  if (refresh !== "restart" && refresh !== "reload")
    throw new SpecError(`field "refresh" must be one of restart, reload`);
  const absent = s === "absent";
  const content = optStr(spec, "content");
  if (!absent && content === undefined) throw new SpecError(`field "content" is required unless state is absent`);
  const next = absent
    ? null
    : `${managedHeader("systemd_unit")}\n${content!.endsWith("\n") ? content : `${content}\n`}`;
  return {
    name,
    state: absent ? "stopped" : s,
    enabled: absent ? false : optBool(spec, "enabled"),
    refresh,
    absent,
    file: { path: join(unitDir, name), next },
  };
}

/** A unit systemd has never loaded (its file is new): what `systemctl` would say of it once reloaded. */
const NEW_UNIT: Cur = { active: "inactive", enabled: "disabled" };

/**
 * The steps after the file: daemon-reload when the file changed, enable/start as asked, then one
 * restart (or reload) when the running unit's file changed or a trigger asks, never both.
 */
function steps(
  w: Want,
  cur: Cur,
  fileChanged: boolean,
  by: readonly string[] | undefined,
  mode: "plan" | "apply",
): { steps: string[][]; note: string } {
  const out: string[][] = [];
  if (fileChanged && !w.absent) out.push(["daemon-reload", "unit file changed"]);
  const c = changes(w, cur);
  if (w.absent) return { steps: [...c, ...(fileChanged ? [["daemon-reload", "unit file removed"]] : [])], note: "" };
  out.push(...c);
  const starting = c.some(([v]) => v === "start");
  const why: string[] = [];
  // The new definition takes effect only through a restart: a reload would keep the old ExecStart.
  const redefined = fileChanged && isRunning(cur.active) && w.state !== "stopped" && !starting;
  if (redefined) why.push("its unit file changed");
  const r = refreshOf(w, cur, c, by, mode);
  if (Array.isArray(r)) why.push(r[1]!);
  if (why.length) out.push([redefined ? "restart" : w.refresh, why.join("; ")]);
  return { steps: out, note: typeof r === "string" && !why.length ? r : "" };
}

/**
 * A unit file and the unit's state in one resource: the file in /etc/systemd/system, then
 * daemon-reload, enable and start, with a restart when the running unit's definition changed.
 * `state: absent` stops and disables the unit, removes the file and reloads.
 */
export function systemdUnitProvider(o: SystemdUnitOptions = {}): Provider {
  const unitDir = o.unitDir ?? "/etc/systemd/system";
  const hasSystemd = o.hasSystemd ?? systemdBooted;
  const m = o.manager ?? systemdManager;
  const ready = async () => {
    if (!(await hasSystemd()))
      throw new UnsupportedError(
        "systemd_unit resources need systemd, and this machine is not running it (/run/systemd/system is missing)",
      );
  };
  // Before the first apply the unit is unknown to systemd; its file's absence says so without asking.
  const inspect = async (w: Want, ctx: ProviderContext): Promise<Cur> =>
    (await lstat(w.file.path).catch(() => null)) ? m.inspect(w.name, ctx, w.enabled !== undefined) : NEW_UNIT;
  return {
    async check(spec, ctx) {
      const w = parse(spec, unitDir);
      await ready();
      const files = await checkFiles([w.file]);
      const cur = await inspect(w, ctx);
      const s = steps(w, cur, files.changed, ctx.refresh, "plan");
      const refreshing = s.steps.find(([v]) => v === "restart" || v === "reload");
      return {
        changed: files.changed || s.steps.length > 0,
        diff: files.diff + renderSteps(s.steps),
        observed: { ...cur, file: files.observed[w.file.path] },
        message: refreshing ? `would ${refreshing[0]} ${w.name}: ${refreshing[1]}` : s.note,
      };
    },
    apply: (spec, ctx) => applyUnit(parse(spec, unitDir), ctx, m, ready, inspect),
  };
}

async function applyUnit(
  w: Want,
  ctx: ProviderContext,
  m: SystemdManager,
  ready: () => Promise<void>,
  inspect: (w: Want, ctx: ProviderContext) => Promise<Cur>,
): Promise<ApplyResult> {
  await ready();
  const before = await inspect(w, ctx);
  const pre = w.absent ? changes(w, before) : [];
  let stdout = "";
  let stderr = "";
  const done: string[] = [];
  const fail = (message: string, diff: string): ApplyResult => ({
    changed: true,
    failed: true,
    diff,
    message,
    stdout,
    stderr,
    observed: {},
  });
  // Absent: stop and disable while the unit still loads, then remove its file.
  for (const [verb] of pre) {
    const { run: x, command } = await m.change(verb!, w.name, ctx);
    stdout += x.stdout;
    stderr += x.stderr;
    if (x.code !== 0) return fail(`${command} exited with code ${x.code ?? "none"}`, renderSteps(pre));
    done.push(verb!);
  }
  const files = await applyFiles([w.file]);
  if (files.message) done.push(files.message);
  const plan: string[][] = [...pre];
  if (files.changed) {
    plan.push(["daemon-reload", w.absent ? "unit file removed" : "unit file changed"]);
    const r = await m.daemonReload(ctx);
    stdout += r.stdout;
    stderr += r.stderr;
    if (r.code !== 0)
      return fail(`systemctl daemon-reload exited with code ${r.code ?? "none"}`, files.diff + renderSteps(plan));
    done.push("daemon-reload");
  }
  if (!w.absent) {
    const s = steps(
      w,
      files.changed ? await m.inspect(w.name, ctx, w.enabled !== undefined) : before,
      files.changed,
      ctx.refresh,
      "apply",
    );
    for (const [verb, what] of s.steps) {
      if (verb === "daemon-reload") continue;
      plan.push([verb!, what!]);
      const { run: x, command } = await m.change(verb!, w.name, ctx);
      stdout += x.stdout;
      stderr += x.stderr;
      if (x.code !== 0)
        return fail(
          `${command} exited with code ${x.code ?? (x.timedOut ? "none (timed out)" : x.signal)}`,
          files.diff + renderSteps(plan),
        );
      done.push(verb === "restart" || verb === "reload" ? `${verb}ed: ${what}` : verb!);
    }
    if (s.note) done.push(s.note);
  }
  const changed = files.changed || plan.length > 0;
  const observed = w.absent
    ? { file: files.observed[w.file.path] }
    : { ...(await m.inspect(w.name, ctx, w.enabled !== undefined)), file: files.observed[w.file.path] };
  return { changed, diff: files.diff + renderSteps(plan), message: done.join(", "), stdout, stderr, observed };
}
