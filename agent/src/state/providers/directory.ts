import { chmod, chown, lchown, lstat, mkdir, readdir, rm, rmdir } from "node:fs/promises";
import type { Stats } from "node:fs";
import { dirname, join } from "node:path";
import { absPath, fmtMode, onlyKeys, optBool, optMode, optStr, state } from "../spec.js";
import { attrChanges, observeAttrs, resolveOwner, type ResolvedOwner, type WantedAttrs } from "../ownership.js";
import { SpecError, type Provider, type Spec } from "../types.js";
import { lstatOrNull } from "../lstat.js";

const FIELDS = ["path", "mode", "owner", "group", "state", "recurse", "force"];
const NEW_DIR_MODE = 0o755;

interface Want extends WantedAttrs {
  path: string;
  state: "present" | "absent";
  recurse: boolean;
  force: boolean;
}

function parse(spec: Spec): Want {
  onlyKeys(spec, FIELDS);
  const w: Want = {
    path: absPath(spec),
    state: state(spec, ["present", "absent"] as const, "present"),
    mode: optMode(spec),
    owner: optStr(spec, "owner"),
    group: optStr(spec, "group"),
    recurse: optBool(spec, "recurse") ?? false,
    force: optBool(spec, "force") ?? false,
  };
  if (w.path === "/") throw new SpecError(`field "path" must not be /`);
  return w;
}

/** Entries below `dir` (not following symlinks) whose owner or group differ from the wanted ids. */
async function strayEntries(dir: string, ids: ResolvedOwner, w: WantedAttrs): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const st = await lstat(p);
      const wrongUser = w.owner !== undefined && st.uid !== ids.uid;
      const wrongGroup = w.group !== undefined && st.gid !== ids.gid;
      if (wrongUser || wrongGroup) out.push(p);
      if (e.isDirectory()) await walk(p);
    }
  };
  await walk(dir);
  return out;
}

async function observe(path: string): Promise<Record<string, unknown>> {
  const st = await lstatOrNull(path);
  if (!st) return { exists: false };
  if (!st.isDirectory())
    return { exists: true, kind: st.isFile() ? "file" : st.isSymbolicLink() ? "symlink" : "other" };
  return { exists: true, ...(await observeAttrs(st)) };
}

interface Plan {
  st: Stats | null;
  lines: string[];
  stray: string[];
}

async function plan(w: Want): Promise<Plan> {
  const st = await lstatOrNull(w.path);
  if (st && !st.isDirectory()) throw new SpecError(`${w.path} exists and is not a directory`);
  if (w.state === "absent") {
    if (!st) return { st, lines: [], stray: [] };
    const entries = await readdir(w.path);
    if (entries.length && !w.force)
      throw new SpecError(
        `${w.path} is not empty (${entries.length} entries); set force: true to remove it with its contents`,
      );
    return {
      st,
      lines: [entries.length ? `remove directory with ${entries.length} top-level entries` : "remove directory"],
      stray: [],
    };
  }
  if (!st)
    return {
      st,
      lines: [
        `create directory (mode ${fmtMode(w.mode ?? NEW_DIR_MODE)}${w.owner ? `, owner ${w.owner}` : ""}${w.group ? `, group ${w.group}` : ""})`,
      ],
      stray: [],
    };
  const ids = await resolveOwner(w);
  const lines = await attrChanges(st, w, ids);
  let stray: string[] = [];
  if (w.recurse && (w.owner !== undefined || w.group !== undefined)) {
    stray = await strayEntries(w.path, ids, w);
    if (stray.length)
      lines.push(`owner/group of ${stray.length} entries below -> ${[w.owner, w.group].filter(Boolean).join(":")}`);
  }
  return { st, lines, stray };
}

const render = (lines: string[]) => lines.map((l) => `${l}\n`).join("");

export function directoryProvider(): Provider {
  return {
    async check(spec) {
      const w = parse(spec);
      const p = await plan(w);
      return { changed: p.lines.length > 0, diff: render(p.lines), observed: await observe(w.path) };
    },
    async apply(spec) {
      const w = parse(spec);
      const p = await plan(w);
      if (p.lines.length === 0)
        return { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: await observe(w.path) };
      if (w.state === "absent") {
        if (w.force) await rm(w.path, { recursive: true });
        else await rmdir(w.path);
      } else {
        const ids = await resolveOwner(w);
        if (ids.missing.length) throw new SpecError(`${ids.missing.join(" and ")} does not exist`);
        if (!p.st) {
          // Parents get the conventional 0755, not the leaf's (possibly restrictive) mode.
          await mkdir(dirname(w.path), { recursive: true, mode: 0o755 });
          await mkdir(w.path, { mode: w.mode ?? NEW_DIR_MODE });
        }
        if (ids.uid !== undefined || ids.gid !== undefined) {
          await chown(w.path, ids.uid ?? -1, ids.gid ?? -1);
          const stray = w.recurse && p.st ? p.stray : [];
          for (const e of stray) await lchown(e, ids.uid ?? -1, ids.gid ?? -1);
        }
        // mkdir's mode is filtered by the umask; set it exactly.
        if (w.mode !== undefined || !p.st) await chmod(w.path, w.mode ?? NEW_DIR_MODE);
      }
      return {
        changed: true,
        diff: render(p.lines),
        message: w.state === "absent" ? "removed" : p.st ? "attributes updated" : "created",
        stdout: "",
        stderr: "",
        observed: await observe(w.path),
      };
    },
  };
}
