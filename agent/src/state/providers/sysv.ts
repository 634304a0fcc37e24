import { access, constants, readdir, stat } from "node:fs/promises";
import { budget, run, type RunResult } from "../proc.js";
import { SpecError, UnsupportedError, type ProviderContext } from "../types.js";

/** What the service provider asks of a service manager (systemd, or SysV init scripts here). */
export interface ServiceManager {
  readonly kind: "systemd" | "sysv";
  /** `active` is systemd's word (active, inactive, …); `enabled` too (enabled, disabled, static, …). */
  inspect(name: string, ctx: ProviderContext, wantEnabled: boolean): Promise<{ active: string; enabled: string }>;
  /** start, stop, restart, reload, enable or disable; the command line, for messages. */
  change(verb: string, name: string, ctx: ProviderContext): Promise<{ run: RunResult; command: string }>;
}

export const QUERY_MS = 30_000;
export const CHANGE_MS = 5 * 60_000;
const RUNLEVELS = ["2", "3", "4", "5"];

export interface SysvOptions {
  /** Where init scripts live (default /etc/init.d). */
  initDir?: string;
  /** Where the rc?.d link directories live (default /etc). */
  rcRoot?: string;
  /** Debian's update-rc.d (default /usr/sbin/update-rc.d); `enabled` is unsupported without it. */
  updateRcD?: string;
}

/** An executable regular file named like the service in the init directory; `.` and `..` never are. */
export async function initScript(initDir: string, name: string): Promise<string | undefined> {
  if (name === "." || name === ".." || name.includes("/")) return undefined;
  const path = `${initDir}/${name}`;
  try {
    if (!(await stat(path)).isFile()) return undefined;
    await access(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

/**
 * LSB init scripts: `status` answers through its exit code (0 running, 1-3 stopped in one way or
 * another, 4 unknown), start/stop/restart/reload do what they say, and a script is enabled when a
 * runlevel 2-5 directory holds an `S??<name>` link to it (what update-rc.d makes).
 */
export function sysvManager(opts: SysvOptions = {}): ServiceManager {
  const initDir = opts.initDir ?? "/etc/init.d";
  const rcRoot = opts.rcRoot ?? "/etc";
  const updateRcD = opts.updateRcD ?? "/usr/sbin/update-rc.d";
  const script = async (name: string) => {
    const path = await initScript(initDir, name);
    if (!path) throw new SpecError(`service ${name} not found (no executable ${initDir}/${name})`);
    return path;
  };
  const linked = async (name: string) => {
    const link = new RegExp(`^S\\d\\d${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
    for (const level of RUNLEVELS) {
      const entries = await readdir(`${rcRoot}/rc${level}.d`).catch(() => [] as string[]);
      if (entries.some((e) => link.test(e))) return true;
    }
    return false;
  };
  const needUpdateRcD = async () => {
    try {
      await access(updateRcD, constants.X_OK);
    } catch {
      throw new UnsupportedError(`"enabled" on a SysV init service needs update-rc.d, which is not at ${updateRcD}`);
    }
  };
  return {
    kind: "sysv",
    async inspect(name, ctx, wantEnabled) {
      const path = await script(name);
      if (wantEnabled) await needUpdateRcD();
      const r = await run(path, ["status"], { timeoutMs: budget(QUERY_MS, ctx.deadline) });
      let active: string;
      if (r.code === 0) active = "active";
      else if (r.code === 1 || r.code === 2 || r.code === 3) active = "inactive";
      else throw new Error(`${path} status exited with ${r.code ?? (r.timedOut ? "no code (timed out)" : r.signal)}`);
      return { active, enabled: (await linked(name)) ? "enabled" : "disabled" };
    },
    async change(verb, name, ctx) {
      const timeoutMs = budget(CHANGE_MS, ctx.deadline);
      if (verb === "enable" || verb === "disable") {
        await needUpdateRcD();
        // `enable` only flips existing links: a script that never had any gets its defaults first.
        if (verb === "enable" && !(await linked(name))) {
          const d = await run(updateRcD, [name, "defaults"], { timeoutMs });
          if (d.code !== 0) return { run: d, command: `update-rc.d ${name} defaults` };
        }
        return { run: await run(updateRcD, [name, verb], { timeoutMs }), command: `update-rc.d ${name} ${verb}` };
      }
      const path = await script(name);
      return { run: await run(path, [verb], { timeoutMs }), command: `${path} ${verb}` };
    },
  };
}

/** Whether an init script exists for `name` (used when systemd is not running). */
export const hasInitScript = (name: string, initDir = "/etc/init.d") =>
  initScript(initDir, name).then((p) => p !== undefined);
