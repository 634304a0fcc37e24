import { createHash } from "node:crypto";
import { readFile, unlink, chmod, chown } from "node:fs/promises";
import type { Stats } from "node:fs";
import { dirname } from "node:path";
import { createTwoFilesPatch } from "diff";
import { sealedContentLine } from "@orch/contracts";
import { absPath, fmtMode, onlyKeys, optMode, optStr, state } from "../spec.js";
import { attrChanges, observeAttrs, resolveOwner, type ResolvedOwner, type WantedAttrs } from "../ownership.js";
import { atomicWrite } from "../atomic-write.js";
import {
  SpecError,
  type BlobFiles,
  type CheckResult,
  type Provider,
  type ProviderContext,
  type Spec,
} from "../types.js";
import { type ContentChange, optSource, planSource, sha256Hex, type Source, writeSource } from "./file-source.js";
import { lstatOrNull } from "../lstat.js";

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
  /** The blob the file is a copy of (`source`), instead of `content`. */
  source: Source | undefined;
}

interface Plan {
  st: Stats | null;
  contentChanged: boolean;
  attrLines: string[];
  diff: string;
}

function parse(spec: Spec, ctx: ProviderContext): Want {
  onlyKeys(spec, FIELDS);
  const content = optStr(spec, "content");
  const source = optSource(spec);
  if (content !== undefined && source !== undefined)
    throw new SpecError(`fields "content" and "source" are mutually exclusive: give the file's content one way`);
  return {
    path: absPath(spec),
    state: state(spec, ["present", "absent"] as const, "present"),
    content: content === undefined ? undefined : Buffer.from(content, "utf8"),
    source,
    mode: optMode(spec) ?? (ctx.secret && content !== undefined ? SECRET_FILE_MODE : undefined),
    owner: optStr(spec, "owner"),
    group: optStr(spec, "group"),
  };
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const isText = (b: Buffer) => !b.includes(0);
const headers = (lines: string[]) => lines.map((l) => `# ${l}\n`).join("");

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
  return { exists: true, sha256: await sha256Hex(path), size: st.size, ...(await observeAttrs(st)) };
}

/** What would change: the header lines (attributes) and the content diff. */
async function plan(w: Want, sealed: boolean, blobs: BlobFiles): Promise<Plan> {
  const st = await lstatOrNull(w.path);
  if (st && !st.isFile())
    throw new SpecError(
      `${w.path} exists and is a ${st.isDirectory() ? "directory" : st.isSymbolicLink() ? "symlink" : "special file"}, not a regular file`,
    );
  if (w.state === "absent")
    return { st, contentChanged: st !== null, attrLines: [], diff: st ? await removalDiff(w.path, st, sealed) : "" };
  if (!st) return planCreate(w, sealed, blobs);
  const attrLines = await attrChanges(st, w, await resolveOwner(w));
  const c = await contentChange(w, st, sealed, blobs);
  return { st, contentChanged: c.changed, attrLines, diff: headers(attrLines) + c.diff };
}

async function planCreate(w: Want, sealed: boolean, blobs: BlobFiles): Promise<Plan> {
  const attrLines = [
    `create file (mode ${fmtMode(w.mode ?? NEW_FILE_MODE)}${w.owner ? `, owner ${w.owner}` : ""}${w.group ? `, group ${w.group}` : ""})`,
  ];
  const body = w.source
    ? (await planSource(w.path, null, w.source, blobs, sealed)).diff
    : contentDiff(w.path, null, w.content ?? Buffer.alloc(0), sealed);
  return { st: null, contentChanged: true, attrLines, diff: headers(attrLines) + body };
}

/** A removed file's diff: a big one is hashed as a stream, never read whole. */
async function removalDiff(path: string, st: Stats, sealed: boolean): Promise<string> {
  if (sealed) return sealedContentLine(st.size, null);
  if (st.size > DIFF_MAX) return `content sha256:${await sha256Hex(path)} (${st.size} bytes) -> (none)\n`;
  return contentDiff(path, await readFile(path), null);
}

async function contentChange(w: Want, st: Stats, sealed: boolean, blobs: BlobFiles): Promise<ContentChange> {
  if (w.source) return planSource(w.path, st, w.source, blobs, sealed);
  if (w.content === undefined) return { changed: false, diff: "" };
  return inlineChange(w.path, st, w.content, sealed);
}

/** `content` against the file: small by the module size limit, so it may be read whole. */
async function inlineChange(path: string, st: Stats, content: Buffer, sealed: boolean): Promise<ContentChange> {
  // A size mismatch settles it without reading a possibly huge file.
  let old: Buffer | null = st.size === content.length ? await readFile(path) : null;
  if (old?.equals(content)) return { changed: false, diff: "" };
  if (sealed) return { changed: true, diff: sealedContentLine(st.size, content.length) };
  if (old === null && st.size <= DIFF_MAX) old = await readFile(path);
  return {
    changed: true,
    diff: old
      ? contentDiff(path, old, content)
      : `content (${st.size} bytes) -> sha256:${sha256(content)} (${content.length} bytes)\n`,
  };
}

/** Writes the whole file (from `content` or a blob) with the wanted attributes. */
async function writeWhole(w: Want, p: Plan, ids: ResolvedOwner, blobs: BlobFiles): Promise<void> {
  // Unmanaged attributes of a replaced file are kept, as an in-place edit would.
  const mode = w.mode ?? (p.st ? p.st.mode & 0o7777 : NEW_FILE_MODE);
  const uid = ids.uid ?? p.st?.uid;
  const gid = ids.gid ?? p.st?.gid;
  try {
    if (w.source) await writeSource(w.path, w.source, blobs, { mode, uid, gid });
    else await atomicWrite(w.path, w.content ?? Buffer.alloc(0), mode, uid, gid);
  } catch (e) {
    // Asked of the directory itself: a blob gone from the cache is an ENOENT too.
    if ((e as NodeJS.ErrnoException).code === "ENOENT" && !(await lstatOrNull(dirname(w.path))))
      throw new SpecError(`parent directory ${dirname(w.path)} does not exist (manage it with a directory resource)`);
    throw e;
  }
}

async function enforce(w: Want, p: Plan, blobs: BlobFiles): Promise<string> {
  if (w.state === "absent") {
    await unlink(w.path);
    return "removed";
  }
  const ids = await resolveOwner(w);
  if (ids.missing.length) throw new SpecError(`${ids.missing.join(" and ")} does not exist`);
  if (!p.st || p.contentChanged) {
    await writeWhole(w, p, ids, blobs);
    return p.st ? "content updated" : "created";
  }
  if (ids.uid !== undefined || ids.gid !== undefined) await chown(w.path, ids.uid ?? -1, ids.gid ?? -1);
  if (w.mode !== undefined) await chmod(w.path, w.mode);
  return "attributes updated";
}

export interface FileProviderDeps {
  /** Where `source` blobs are read from: the agent's blob cache. */
  blobs: BlobFiles;
}

export function fileProvider(deps: FileProviderDeps): Provider {
  return {
    async check(spec, ctx): Promise<CheckResult> {
      const w = parse(spec, ctx);
      const p = await plan(w, Boolean(ctx.sealed), deps.blobs);
      return { changed: p.contentChanged || p.attrLines.length > 0, diff: p.diff, observed: await observe(w.path) };
    },
    async apply(spec, ctx) {
      const w = parse(spec, ctx);
      const p = await plan(w, Boolean(ctx.sealed), deps.blobs);
      if (!p.contentChanged && p.attrLines.length === 0)
        return { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: await observe(w.path) };
      const message = await enforce(w, p, deps.blobs);
      return { changed: true, diff: p.diff, message, stdout: "", stderr: "", observed: await observe(w.path) };
    },
  };
}
