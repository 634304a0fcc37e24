import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SYSCTL_NAME_RE, SYSCTL_NAME_RULE } from "@orch/contracts";
import { onlyKeys, optBool, state, str } from "../spec.js";
import { SpecError, UnsupportedError, type ApplyResult, type Provider, type Spec } from "../types.js";
import { applyFiles, checkFiles, managedHeader, type OwnedFile } from "./owned-files.js";

const FIELDS = ["name", "value", "state", "persist"];

export interface SysctlOptions {
  /** Where the persisted setting is written (default /etc/sysctl.d). */
  dir?: string | undefined;
  /** The live kernel parameters (default /proc/sys; tests use a directory of their own). */
  procSys?: string | undefined;
}

interface Want {
  name: string;
  /** Whitespace-normalised: the kernel separates a vector's fields with tabs, a module with spaces. */
  value: string | undefined;
  state: "present" | "absent";
  persist: boolean;
  file: OwnedFile;
  live: string;
}

export const normaliseSysctl = (v: string) => v.trim().split(/\s+/).join(" ");

function scalar(spec: Spec): string | undefined {
  const v = spec.value;
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number" || typeof v === "boolean") return String(v === true ? 1 : v === false ? 0 : v);
  if (typeof v !== "string") throw new SpecError(`field "value" must be a string or a number`);
  if (/[\r\n]/.test(v)) throw new SpecError(`field "value" must be one line`);
  if (v.trim() === "") throw new SpecError(`field "value" must not be empty`);
  return normaliseSysctl(v);
}

function parse(spec: Spec, o: Required<SysctlOptions>): Want {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  if (!SYSCTL_NAME_RE.test(name)) throw new SpecError(`field "name" ${SYSCTL_NAME_RULE}`);
  const st = state(spec, ["present", "absent"] as const, "present");
  const value = scalar(spec);
  if (st === "present" && value === undefined) throw new SpecError(`field "value" is required unless state is absent`);
  const persist = optBool(spec, "persist") ?? true;
  const path = join(o.dir, `99-orch-${name}.conf`);
  const next = st === "absent" || !persist ? null : `${managedHeader("sysctl")}\n${name} = ${value}\n`;
  return { name, value, state: st, persist, file: { path, next }, live: join(o.procSys, ...name.split(".")) };
}

async function readLive(w: Want): Promise<string> {
  try {
    return normaliseSysctl(await readFile(w.live, "utf8"));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new SpecError(`unknown kernel parameter ${w.name} (no ${w.live})`);
    if (code === "EACCES" || code === "EPERM") throw new SpecError(`kernel parameter ${w.name} is not readable`);
    throw e;
  }
}

/** The files this resource owns: the sysctl.d file, or none when it is not persisted (and not being removed). */
const filesOf = (w: Want): OwnedFile[] => (w.persist || w.state === "absent" ? [w.file] : []);

const liveChange = (w: Want, live: string) =>
  w.state === "present" && live !== w.value ? `${w.name}: ${live} -> ${w.value}\n` : "";

/**
 * A kernel parameter: its live value in /proc/sys and, unless `persist: false`, the file
 * /etc/sysctl.d/99-orch-<name>.conf that sets it again at boot. `absent` removes the file and
 * leaves the running value alone (there is no "default" to go back to without a reboot).
 */
export function sysctlProvider(opts: SysctlOptions = {}): Provider {
  const o = { dir: opts.dir ?? "/etc/sysctl.d", procSys: opts.procSys ?? "/proc/sys" };
  const requireDir = async (w: Want) => {
    if (!filesOf(w).length || w.state === "absent") return;
    const st = await stat(o.dir).catch(() => null);
    if (!st?.isDirectory())
      throw new UnsupportedError(`${o.dir} does not exist (give persist: false to set only the running value)`);
  };
  return {
    async check(spec) {
      const w = parse(spec, o);
      await requireDir(w);
      const live = await readLive(w);
      const files = await checkFiles(filesOf(w));
      const change = liveChange(w, live);
      return {
        changed: files.changed || change !== "",
        diff: change + files.diff,
        observed: { value: live, ...files.observed },
      };
    },
    async apply(spec) {
      const w = parse(spec, o);
      await requireDir(w);
      return applySysctl(w);
    },
  };
}

async function applySysctl(w: Want): Promise<ApplyResult> {
  const before = await readLive(w);
  const change = liveChange(w, before);
  // The file first: a value the kernel refuses still fails the resource, and is set at the next boot as asked.
  const files = await applyFiles(filesOf(w));
  const done = files.message ? [files.message] : [];
  if (change) {
    try {
      await writeFile(w.live, `${w.value}\n`);
    } catch (e) {
      return {
        ...files,
        changed: true,
        failed: true,
        diff: change + files.diff,
        message: `the kernel refused ${w.name} = ${w.value}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
        observed: { value: before, ...files.observed },
      };
    }
    const after = await readLive(w);
    // The kernel may normalise what it was given ("01" reads back "1"): say so, or every check would report drift.
    if (after !== w.value)
      return {
        ...files,
        changed: true,
        failed: true,
        diff: change + files.diff,
        message: `wrote ${w.name} = ${w.value}, and the kernel reads it back as ${after}: give the value as the kernel prints it`,
        observed: { value: after, ...files.observed },
      };
    done.unshift(`${w.name} set to ${w.value}`);
  }
  if (w.state === "absent" && files.changed) done.push(`the running value (${before}) stays until reboot`);
  return {
    changed: files.changed || change !== "",
    diff: change + files.diff,
    message: done.join(", "),
    stdout: "",
    stderr: "",
    observed: { value: await readLive(w), ...files.observed },
  };
}
