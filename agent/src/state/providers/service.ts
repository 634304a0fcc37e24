import { stat } from "node:fs/promises";
import { onlyKeys, optBool, optStr, str } from "../spec.js";
import { budget, run, type RunResult } from "../proc.js";
import { listKeys } from "../triggers.js";
import {
  SpecError,
  UnsupportedError,
  type ApplyResult,
  type Provider,
  type ProviderContext,
  type Spec,
} from "../types.js";
import { CHANGE_MS, hasInitScript, QUERY_MS, sysvManager, type ServiceManager, type SysvOptions } from "./sysv.js";

const FIELDS = ["name", "state", "enabled", "refresh"];

export type Want = {
  name: string;
  state: "running" | "stopped" | undefined;
  enabled: boolean | undefined;
  refresh: "restart" | "reload";
};

function parse(spec: Spec): Want {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  if (!/^[A-Za-z0-9@_.:\\-]+$/.test(name) || name.startsWith("-"))
    throw new SpecError(`field "name" is not a valid unit name`);
  const s = optStr(spec, "state");
  if (s !== undefined && s !== "running" && s !== "stopped")
    throw new SpecError(`field "state" must be one of running, stopped`);
  const enabled = optBool(spec, "enabled");
  if (s === undefined && enabled === undefined) throw new SpecError(`at least one of "state" or "enabled" is required`);
  const refresh = optStr(spec, "refresh") ?? "restart";
  if (refresh !== "restart" && refresh !== "reload")
    throw new SpecError(`field "refresh" must be one of restart, reload`);
  return { name, state: s, enabled, refresh };
}

/** The same test systemd's own tools use (sd_booted): this directory exists only when systemd is PID 1. */
export const systemdBooted = () =>
  stat("/run/systemd/system").then(
    (s) => s.isDirectory(),
    () => false,
  );

/** systemd's manager, plus what only it has: re-reading unit files. */
export interface SystemdManager extends ServiceManager {
  daemonReload(ctx: ProviderContext): Promise<RunResult>;
}

/** `bin` is systemctl unless a test names another. */
export function systemdManagerFor(bin = "systemctl"): SystemdManager {
  const systemctl = (args: string[], ms: number, ctx: ProviderContext) =>
    run(bin, args, { timeoutMs: budget(ms, ctx.deadline) });
  return {
    kind: "systemd",
    async inspect(name, ctx) {
      const load = await systemctl(["show", "--property=LoadState", "--value", "--", name], QUERY_MS, ctx);
      if (load.code !== 0) throw new Error(`systemctl show failed (exit ${load.code ?? "none"})`);
      if (load.stdout.trim() === "not-found") throw new SpecError(`unit ${name} not found`);
      // is-active / is-enabled answer on stdout and signal "no" through the exit code: read stdout only.
      const active = (await systemctl(["is-active", "--", name], QUERY_MS, ctx)).stdout.trim() || "unknown";
      const enabled = (await systemctl(["is-enabled", "--", name], QUERY_MS, ctx)).stdout.trim() || "unknown";
      return { active, enabled };
    },
    async change(verb, name, ctx) {
      return { run: await systemctl([verb, "--", name], CHANGE_MS, ctx), command: `systemctl ${verb}` };
    },
    daemonReload: (ctx) => systemctl(["daemon-reload"], CHANGE_MS, ctx),
  };
}

export const systemdManager = systemdManagerFor();

export type Cur = { active: string; enabled: string };
export const isRunning = (active: string) => active === "active" || active === "activating" || active === "reloading";

export function changes(w: Want, cur: Cur): string[][] {
  const out: string[][] = [];
  if (w.enabled !== undefined) {
    const isEnabled = cur.enabled === "enabled" || cur.enabled === "enabled-runtime" || cur.enabled === "alias";
    // static/indirect units cannot be toggled: they count as satisfying either wish.
    const toggleable = !["static", "indirect", "generated", "transient"].includes(cur.enabled);
    if (toggleable && isEnabled !== w.enabled)
      out.push([w.enabled ? "enable" : "disable", `${cur.enabled} -> ${w.enabled ? "enabled" : "disabled"}`]);
  }
  if (w.state !== undefined) {
    const running = isRunning(cur.active);
    if (running !== (w.state === "running"))
      out.push([
        w.state === "running" ? "start" : "stop",
        `${cur.active} -> ${w.state === "running" ? "active" : "inactive"}`,
      ]);
  }
  return out;
}

/**
 * The refresh a triggering change asks for, or a note saying why there is none: a service this
 * operation starts (or stops, or that is not running and not asked to run) is not restarted on top.
 */
export function refreshOf(
  w: Want,
  cur: Cur,
  c: string[][],
  by: readonly string[] | undefined,
  mode: "plan" | "apply",
): string[] | string | undefined {
  if (!by?.length) return undefined;
  const why = `triggered by ${listKeys(by)}`;
  const not = mode === "plan" ? `would not ${w.refresh}` : `not ${w.refresh}ed`;
  if (c.some(([v]) => v === "start"))
    return `${not}: ${mode === "plan" ? "this operation would start it" : "started by this operation"} (${why})`;
  if (w.state === "stopped" || !isRunning(cur.active)) return `${not}: ${w.name} is not running (${why})`;
  return [w.refresh, why];
}

export const renderSteps = (c: string[][]) => c.map(([verb, what]) => `${verb}: ${what}\n`).join("");

export interface ServiceOptions extends SysvOptions {
  hasSystemd?: () => Promise<boolean>;
}

/**
 * systemd when it is PID 1; otherwise the service's SysV init script (/etc/init.d/<name>), so the
 * machines without systemd (containers, older distributions) are managed too.
 */
export function serviceProvider(o: ServiceOptions = {}): Provider {
  const hasSystemd = o.hasSystemd ?? systemdBooted;
  const sysv = sysvManager(o);
  const managerFor = async (name: string): Promise<ServiceManager> => {
    if (await hasSystemd()) return systemdManager;
    if (await hasInitScript(name, o.initDir)) return sysv;
    throw new UnsupportedError(
      `service resources need systemd, and this machine is not running it (/run/systemd/system is missing), or an init script ${o.initDir ?? "/etc/init.d"}/${name}, which does not exist`,
    );
  };
  return {
    async check(spec, ctx) {
      const w = parse(spec);
      const m = await managerFor(w.name);
      const cur = await m.inspect(w.name, ctx, w.enabled !== undefined);
      const c = changes(w, cur);
      const r = refreshOf(w, cur, c, ctx.refresh, "plan");
      if (Array.isArray(r)) c.push(r);
      const message = Array.isArray(r)
        ? `would ${w.refresh} ${w.name}: ${listKeys(ctx.refresh!)} ${ctx.refresh!.length > 1 ? "change" : "changes"}`
        : r;
      return { changed: c.length > 0, diff: renderSteps(c), observed: { ...cur, manager: m.kind }, message };
    },
    apply: (spec, ctx) => applyService(parse(spec), ctx, managerFor),
  };
}

async function applyService(
  w: Want,
  ctx: ProviderContext,
  managerFor: (name: string) => Promise<ServiceManager>,
): Promise<ApplyResult> {
  const m = await managerFor(w.name);
  const observe = async () => ({ ...(await m.inspect(w.name, ctx, w.enabled !== undefined)), manager: m.kind });
  const cur = await m.inspect(w.name, ctx, w.enabled !== undefined);
  const c = changes(w, cur);
  const r = refreshOf(w, cur, c, ctx.refresh, "apply");
  const steps = Array.isArray(r) ? [...c, r] : c;
  const note = typeof r === "string" ? r : "";
  if (!steps.length)
    return { changed: false, diff: "", message: note, stdout: "", stderr: "", observed: await observe() };
  let stdout = "";
  let stderr = "";
  const done: string[] = [];
  for (const [verb, what] of steps) {
    const { run: x, command } = await m.change(verb!, w.name, ctx);
    stdout += x.stdout;
    stderr += x.stderr;
    if (x.code !== 0)
      return {
        changed: true,
        failed: true,
        diff: renderSteps(steps),
        message: `${command} exited with code ${x.code ?? (x.timedOut ? "none (timed out)" : x.signal)}`,
        stdout,
        stderr,
        observed: await observe(),
      };
    done.push(verb === "restart" || verb === "reload" ? `${verb}ed: ${what}` : verb!);
  }
  if (note) done.push(note);
  return {
    changed: true,
    diff: renderSteps(steps),
    message: done.join(", "),
    stdout,
    stderr,
    observed: await observe(),
  };
}
