import { createHash } from "node:crypto";
import { lstat, readFile, unlink, chmod, chown } from "node:fs/promises";
import type { Stats } from "node:fs";
import { dirname } from "node:path";
import { createTwoFilesPatch } from "diff";
import { sealedContentLine } from "@orch/contracts";
import { absPath, fmtMode, onlyKeys, optMode, optStr, state } from "../spec.js";
import { attrChanges, observeAttrs, resolveOwner, type WantedAttrs } from "../ownership.js";
import { atomicWrite } from "../atomic-write.js";
import {
  SpecError,
  UnsupportedError,
  type CheckResult,
  type Provider,
  type ProviderContext,
  type Spec,
} from "../types.js";

const FIELDS = ["path", "content", "source", "mode", "owner", "group", "state"];
/** Above this either side is summarised by its hash instead of a line diff. */
const DIFF_MAX = 1024 * 1024;
const NEW_FILE_MODE = 0o644;
/** A file rendered with a secret: its owner (root) only, unless the module says otherwise. */
const SECRET_FILE_MODE = 0o600;

interface Want extends WantedAttrs {
  path: string;
  state: "present" | "absent";
  content: Buffer | undefined;
}

function parse(spec: Spec, ctx: ProviderContext): Want {
  onlyKeys(spec, FIELDS);
  if (spec.source !== undefined)
    throw new UnsupportedError(`file "source" is not supported by this agent; render the file through "content"`);
  const content = optStr(spec, "content");
  return {
    path: absPath(spec),
    state: state(spec, ["present", "absent"] as const, "present"),
    content: content === undefined ? undefined : Buffer.from(content, "utf8"),
    mode: optMode(spec) ?? (ctx.secret && content !== undefined ? SECRET_FILE_MODE : undefined),
    owner: optStr(spec, "owner"),
    group: optStr(spec, "group"),
  };
}

async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await lstat(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const isText = (b: Buffer) => !b.includes(0);

function contentDiff(path: string, old: Buffer | null, next: Buffer | null, sealed = false): string {
  const a = old ?? Buffer.alloc(0);
  const b = next ?? Buffer.alloc(0);
  if (sealed) return sealedContentLine(old ? a.length : null, next ? b.length : null);
  if (a.length > DIFF_MAX || b.length > DIFF_MAX || !isText(a) || !isText(b)) {
    return `content ${old ? `sha256:${sha256(a)} (${a.length} bytes)` : "(none)"} -> ${next ? `sha256:${sha256(b)} (${b.length} bytes)` : "(none)"}\n`;
  }
  return createTwoFilesPatch(
    old ? path : "/dev/null",
    next ? path : "/dev/null",
    a.toString("utf8"),
    b.toString("utf8"),
    "current",
    "desired",
  );
}

async function observe(path: string): Promise<Record<string, unknown>> {
  const st = await lstatOrNull(path);
  if (!st) return { exists: false };
  if (!st.isFile())
    return { exists: true, kind: st.isDirectory() ? "directory" : st.isSymbolicLink() ? "symlink" : "other" };
  const data = await readFile(path);
  return { exists: true, sha256: sha256(data), size: st.size, ...(await observeAttrs(st)) };
}

/** What would change: the header lines (attributes) and the content diff. */
async function plan(
  w: Want,
  sealed: boolean,
): Promise<{ st: Stats | null; old: Buffer | null; contentChanged: boolean; attrLines: string[]; diff: string }> {
  const st = await lstatOrNull(w.path);
  if (st && !st.isFile())
    throw new SpecError(
      `${w.path} exists and is a ${st.isDirectory() ? "directory" : st.isSymbolicLink() ? "symlink" : "special file"}, not a regular file`,
    );
  if (w.state === "absent") {
    if (!st) return { st, old: null, contentChanged: false, attrLines: [], diff: "" };
    const old = await readFile(w.path);
    return { st, old, contentChanged: true, attrLines: [], diff: contentDiff(w.path, old, null, sealed) };
  }
  if (!st) {
    const lines = [
      `create file (mode ${fmtMode(w.mode ?? NEW_FILE_MODE)}${w.owner ? `, owner ${w.owner}` : ""}${w.group ? `, group ${w.group}` : ""})`,
    ];
    return {
      st,
      old: null,
      contentChanged: true,
      attrLines: lines,
      diff: lines.map((l) => `# ${l}\n`).join("") + contentDiff(w.path, null, w.content ?? Buffer.alloc(0), sealed),
    };
  }
  const ids = await resolveOwner(w);
  const attrLines = await attrChanges(st, w, ids);
  let old: Buffer | null = null;
  let contentChanged = false;
  if (w.content !== undefined) {
    // A size mismatch settles it without reading a possibly huge file.
    if (st.size !== w.content.length) contentChanged = true;
    else {
      old = await readFile(w.path);
      contentChanged = !old.equals(w.content);
    }
    if (contentChanged && old === null && st.size <= DIFF_MAX) old = await readFile(w.path);
  }
  const diff =
    attrLines.map((l) => `# ${l}\n`).join("") +
    (contentChanged
      ? sealed
        ? sealedContentLine(st.size, w.content!.length)
        : old
          ? contentDiff(w.path, old, w.content!)
          : `content (${st.size} bytes) -> sha256:${sha256(w.content!)} (${w.content!.length} bytes)\n`
      : "");
  return { st, old, contentChanged, attrLines, diff };
}

export function fileProvider(): Provider {
  return {
    async check(spec, ctx): Promise<CheckResult> {
      const w = parse(spec, ctx);
      const p = await plan(w, Boolean(ctx.sealed));
      return { changed: p.contentChanged || p.attrLines.length > 0, diff: p.diff, observed: await observe(w.path) };
    },
    async apply(spec, ctx) {
      const w = parse(spec, ctx);
      const p = await plan(w, Boolean(ctx.sealed));
      const changed = p.contentChanged || p.attrLines.length > 0;
      if (!changed)
        return { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: await observe(w.path) };
      let message: string;
      if (w.state === "absent") {
        await unlink(w.path);
        message = "removed";
      } else {
        const ids = await resolveOwner(w);
        if (ids.missing.length) throw new SpecError(`${ids.missing.join(" and ")} does not exist`);
        if (!p.st || p.contentChanged) {
          // Unmanaged attributes of a replaced file are kept, as an in-place edit would.
          const mode = w.mode ?? (p.st ? p.st.mode & 0o7777 : NEW_FILE_MODE);
          const uid = ids.uid ?? p.st?.uid;
          const gid = ids.gid ?? p.st?.gid;
          try {
            await atomicWrite(w.path, w.content ?? Buffer.alloc(0), mode, uid, gid);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code === "ENOENT")
              throw new SpecError(
                `parent directory ${dirname(w.path)} does not exist (manage it with a directory resource)`,
              );
            throw e;
          }
          message = p.st ? "content updated" : "created";
        } else {
          if (ids.uid !== undefined || ids.gid !== undefined) await chown(w.path, ids.uid ?? -1, ids.gid ?? -1);
          if (w.mode !== undefined) await chmod(w.path, w.mode);
          message = "attributes updated";
        }
      }
      return { changed: true, diff: p.diff, message, stdout: "", stderr: "", observed: await observe(w.path) };
    },
  };
}
