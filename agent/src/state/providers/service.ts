import { stat } from "node:fs/promises";
import { onlyKeys, optBool, optStr, str } from "../spec.js";
import { budget, run } from "../proc.js";
import { SpecError, UnsupportedError, type Provider, type ProviderContext, type Spec } from "../types.js";

const FIELDS = ["name", "state", "enabled"];
const QUERY_MS = 30_000;
const CHANGE_MS = 5 * 60_000;

type Want = { name: string; state: "running" | "stopped" | undefined; enabled: boolean | undefined };

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
  return { name, state: s, enabled };
}

/** The same test systemd's own tools use (sd_booted): this directory exists only when systemd is PID 1. */
export const systemdBooted = () =>
  stat("/run/systemd/system").then(
    (s) => s.isDirectory(),
    () => false,
  );

const systemctl = (args: string[], ms: number, ctx: ProviderContext) =>
  run("systemctl", args, { timeoutMs: budget(ms, ctx.deadline) });

async function inspect(name: string, ctx: ProviderContext): Promise<{ active: string; enabled: string }> {
  const load = await systemctl(["show", "--property=LoadState", "--value", "--", name], QUERY_MS, ctx);
  if (load.code !== 0) throw new Error(`systemctl show failed (exit ${load.code ?? "none"})`);
  if (load.stdout.trim() === "not-found") throw new SpecError(`unit ${name} not found`);
  // is-active / is-enabled answer on stdout and signal "no" through the exit code: read stdout only.
  const active = (await systemctl(["is-active", "--", name], QUERY_MS, ctx)).stdout.trim() || "unknown";
  const enabled = (await systemctl(["is-enabled", "--", name], QUERY_MS, ctx)).stdout.trim() || "unknown";
  return { active, enabled };
}

function changes(w: Want, cur: { active: string; enabled: string }): string[][] {
  const out: string[][] = [];
  if (w.enabled !== undefined) {
    const isEnabled = cur.enabled === "enabled" || cur.enabled === "enabled-runtime" || cur.enabled === "alias";
    // static/indirect units cannot be toggled: they count as satisfying either wish.
    const toggleable = !["static", "indirect", "generated", "transient"].includes(cur.enabled);
    if (toggleable && isEnabled !== w.enabled)
      out.push([w.enabled ? "enable" : "disable", `${cur.enabled} -> ${w.enabled ? "enabled" : "disabled"}`]);
  }
  if (w.state !== undefined) {
    const running = cur.active === "active" || cur.active === "activating" || cur.active === "reloading";
    if (running !== (w.state === "running"))
      out.push([
        w.state === "running" ? "start" : "stop",
        `${cur.active} -> ${w.state === "running" ? "active" : "inactive"}`,
      ]);
  }
  return out;
}

const render = (c: string[][]) => c.map(([verb, what]) => `${verb}: ${what}\n`).join("");

export function serviceProvider(hasSystemd: () => Promise<boolean> = systemdBooted): Provider {
  const need = async () => {
    if (!(await hasSystemd()))
      throw new UnsupportedError(
        "service resources need systemd, and this machine is not running it (/run/systemd/system is missing)",
      );
  };
  return {
    async check(spec, ctx) {
      const w = parse(spec);
      await need();
      const cur = await inspect(w.name, ctx);
      const c = changes(w, cur);
      return { changed: c.length > 0, diff: render(c), observed: cur };
    },
    async apply(spec, ctx) {
      const w = parse(spec);
      await need();
      const cur = await inspect(w.name, ctx);
      const c = changes(w, cur);
      if (!c.length) return { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: cur };
      let stdout = "";
      let stderr = "";
      for (const [verb] of c) {
        const r = await systemctl([verb!, "--", w.name], CHANGE_MS, ctx);
        stdout += r.stdout;
        stderr += r.stderr;
        if (r.code !== 0) {
          return {
            changed: true,
            failed: true,
            diff: render(c),
            message: `systemctl ${verb} exited with code ${r.code ?? (r.timedOut ? "none (timed out)" : r.signal)}`,
            stdout,
            stderr,
            observed: await inspect(w.name, ctx),
          };
        }
      }
      return {
        changed: true,
        diff: render(c),
        message: c.map(([v]) => v).join(", "),
        stdout,
        stderr,
        observed: await inspect(w.name, ctx),
      };
    },
  };
}
