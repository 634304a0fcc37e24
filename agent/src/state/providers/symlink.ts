import { randomBytes } from "node:crypto";
import { readlink, rename, symlink, unlink } from "node:fs/promises";
import { basename, dirname, isAbsolute, join } from "node:path";
import { absPath, hasDotDot, normalisePath, onlyKeys, state, str } from "../spec.js";
import { SpecError, type Provider, type Spec } from "../types.js";
import { lstatOrNull } from "../lstat.js";

const FIELDS = ["path", "target", "state"];

function parse(spec: Spec) {
  onlyKeys(spec, FIELDS);
  const s = state(spec, ["present", "absent"] as const, "present");
  return { path: absPath(spec), state: s, target: s === "present" ? target(spec) : undefined };
}

/**
 * Relative targets stay as given (they resolve from the link's directory), absolute ones are
 * normalised like paths; a `..` segment is refused in both, so a rendered value cannot climb out.
 */
function target(spec: Spec): string {
  const t = str(spec, "target");
  if (t.includes("\0")) throw new SpecError(`field "target" must not contain NUL`);
  if (hasDotDot(t)) throw new SpecError(`field "target" must not contain '..' segments (rendered: ${t})`);
  return isAbsolute(t) ? normalisePath(t) : t;
}

async function inspect(path: string): Promise<{ exists: boolean; target?: string }> {
  const st = await lstatOrNull(path);
  if (!st) return { exists: false };
  if (!st.isSymbolicLink())
    throw new SpecError(`${path} exists and is not a symlink; remove it first (it is never replaced implicitly)`);
  return { exists: true, target: await readlink(path) };
}

const observed = (cur: { exists: boolean; target?: string }) =>
  cur.exists ? { exists: true, target: cur.target ?? "" } : { exists: false };

function describe(w: ReturnType<typeof parse>, cur: { exists: boolean; target?: string }): string {
  if (w.state === "absent") return cur.exists ? `remove symlink -> ${cur.target}\n` : "";
  if (!cur.exists) return `create symlink -> ${w.target}\n`;
  return cur.target === w.target ? "" : `symlink target ${cur.target} -> ${w.target}\n`;
}

export function symlinkProvider(): Provider {
  return {
    async check(spec) {
      const w = parse(spec);
      const cur = await inspect(w.path);
      const diff = describe(w, cur);
      return { changed: diff !== "", diff, observed: observed(cur) };
    },
    async apply(spec) {
      const w = parse(spec);
      const cur = await inspect(w.path);
      const diff = describe(w, cur);
      if (!diff) return { changed: false, diff, message: "", stdout: "", stderr: "", observed: observed(cur) };
      if (w.state === "absent") await unlink(w.path);
      else {
        // Create beside it and rename over the old link: the path never disappears in between.
        const tmp = join(dirname(w.path), `.${basename(w.path)}.orch-${randomBytes(6).toString("hex")}`);
        try {
          await symlink(w.target!, tmp);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === "ENOENT")
            throw new SpecError(`parent directory ${dirname(w.path)} does not exist`);
          throw e;
        }
        await rename(tmp, w.path).catch(async (e) => {
          await unlink(tmp).catch(() => {});
          throw e;
        });
      }
      return {
        changed: true,
        diff,
        message: w.state === "absent" ? "removed" : cur.exists ? "retargeted" : "created",
        stdout: "",
        stderr: "",
        observed: observed(await inspect(w.path)),
      };
    },
  };
}
