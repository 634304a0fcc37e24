import { chmod, lstat, readFile, unlink } from "node:fs/promises";
import type { Stats } from "node:fs";
import { dirname } from "node:path";
import { createTwoFilesPatch } from "diff";
import { sealedContentLine } from "@orch/contracts";
import { fmtMode, optBool, optStr } from "../spec.js";
import { observeAttrs } from "../ownership.js";
import { atomicWrite } from "../atomic-write.js";
import {
  SpecError,
  type ApplyResult,
  type CheckResult,
  type Provider,
  type ProviderContext,
  type Spec,
} from "../types.js";

/**
 * Shared by the providers that compute a text file from its current content (line, block, cron):
 * read, diff, write atomically keeping the file's mode and owner. The diff has the same shape as
 * the file provider's (`--- current` / `+++ desired`, `/dev/null` for a missing side).
 */

export const NEW_FILE_MODE = 0o644;
/** A file created to hold text rendered with a secret: its owner (root) only. */
const SECRET_FILE_MODE = 0o600;
/** The mode of a file this resource creates (see ProviderContext.secret). */
const newFileMode = (ctx: Pick<ProviderContext, "secret"> | undefined) =>
  ctx?.secret ? SECRET_FILE_MODE : NEW_FILE_MODE;

export interface Current {
  st: Stats | null;
  text: string | null;
}

/** The file's text, or nulls when it does not exist; anything but a regular file is refused. */
export async function readCurrent(path: string): Promise<Current> {
  let st: Stats;
  try {
    st = await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { st: null, text: null };
    throw e;
  }
  if (!st.isFile())
    throw new SpecError(
      `${path} exists and is a ${st.isDirectory() ? "directory" : st.isSymbolicLink() ? "symlink" : "special file"}, not a regular file`,
    );
  const text = decodeText(await readFile(path));
  // Rewriting a binary or non-UTF-8 file line by line would corrupt it.
  if (text === null) throw new SpecError(`${path} is not a UTF-8 text file`);
  return { st, text };
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function decodeText(data: Buffer): string | null {
  if (data.includes(0)) return null;
  try {
    return utf8.decode(data);
  } catch {
    return null;
  }
}

/** Above this either side is summarised by its size instead of a line diff (as the file provider does). */
const DIFF_MAX = 1024 * 1024;

export function textDiff(path: string, old: string | null, next: string | null): string {
  if ((old?.length ?? 0) > DIFF_MAX || (next?.length ?? 0) > DIFF_MAX)
    return `content ${old === null ? "(none)" : `(${Buffer.byteLength(old)} bytes)`} -> ${next === null ? "(none)" : `(${Buffer.byteLength(next)} bytes)`}\n`;
  return createTwoFilesPatch(
    old !== null ? path : "/dev/null",
    next !== null ? path : "/dev/null",
    old ?? "",
    next ?? "",
    "current",
    "desired",
  );
}

const bytes = (text: string | null) => (text === null ? null : Buffer.byteLength(text));

/** A file's lines without the final newline; `eol` tells whether it had one. */
export interface Lines {
  lines: string[];
  eol: boolean;
}

export function splitLines(text: string): Lines {
  if (text === "") return { lines: [], eol: true };
  const lines = text.split("\n");
  const eol = lines[lines.length - 1] === "";
  if (eol) lines.pop();
  return { lines, eol };
}

export const joinLines = (l: Lines): string => (l.lines.length ? l.lines.join("\n") + (l.eol ? "\n" : "") : "");

/**
 * Where a new line or block goes when nothing marks its place: after the last line matching
 * `after` (`EOF`: the end), before the first matching `before` (`BOF`: the start), else the end.
 */
export function insertIndex(lines: readonly string[], after?: RegExp | "EOF", before?: RegExp | "BOF"): number {
  if (before === "BOF") return 0;
  if (before) {
    const i = lines.findIndex((l) => before.test(l));
    return i >= 0 ? i : lines.length;
  }
  if (after && after !== "EOF") {
    for (let i = lines.length - 1; i >= 0; i--) if (after.test(lines[i]!)) return i + 1;
  }
  return lines.length;
}

/** A spec field holding a regular expression (JavaScript syntax, no flags). */
export function regexpField(key: string, v: string | undefined): RegExp | undefined {
  if (v === undefined) return undefined;
  try {
    return new RegExp(v);
  } catch (e) {
    throw new SpecError(`field "${key}" must be a valid regular expression: ${(e as Error).message}`);
  }
}

/** Where the line and block providers put new text, and whether they may create the file. */
export interface Placement {
  after: RegExp | "EOF" | undefined;
  before: RegExp | "BOF" | undefined;
  create: boolean;
}

/** The insert_after / insert_before / create fields (at most one of the first two). */
export function placement(spec: Spec): Placement {
  const afterRaw = optStr(spec, "insert_after");
  const beforeRaw = optStr(spec, "insert_before");
  if (afterRaw !== undefined && beforeRaw !== undefined)
    throw new SpecError(`give at most one of "insert_after" and "insert_before"`);
  return {
    after: afterRaw === "EOF" ? "EOF" : regexpField("insert_after", afterRaw),
    before: beforeRaw === "BOF" ? "BOF" : regexpField("insert_before", beforeRaw),
    create: optBool(spec, "create") ?? false,
  };
}

/**
 * The file does not exist: absent is already met; present writes just `lines`, but only with
 * create (a missing file is more often a wrong path than a wish for a one-line file).
 */
export function desireMissing(
  w: { path: string; state: "present" | "absent"; create: boolean },
  what: string,
  lines: string[],
): Desired {
  if (w.state === "absent") return { next: null };
  if (!w.create)
    return { next: null, blocked: `${w.path} does not exist (set create: true to create it with ${what})` };
  return { next: joinLines({ lines, eol: true }) };
}

/** Writes through the shared atomic writer; only an existing file's owner is carried over (a new file is the agent's). */
export async function writeText(path: string, data: string, mode: number, st: Stats | null): Promise<void> {
  try {
    await atomicWrite(path, data, mode, st?.uid, st?.gid);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT")
      throw new SpecError(`parent directory ${dirname(path)} does not exist (manage it with a directory resource)`);
    throw e;
  }
}

/** What a provider wants the file to be: its text (null = removed) and, when managed, its mode. */
export interface Desired {
  next: string | null;
  mode?: number;
  /** Set when the change cannot be made (apply fails with it; plan shows it as a `# ` line). */
  blocked?: string;
}

export async function observeText(path: string): Promise<Record<string, unknown>> {
  const { st, text } = await readCurrent(path).catch(() => ({ st: null, text: null }));
  if (!st || text === null) return { exists: false };
  return { exists: true, size: st.size, ...(await observeAttrs(st)) };
}

interface Planned {
  changed: boolean;
  diff: string;
  contentChanged: boolean;
  modeChange: boolean;
}

type TextContext = Pick<ProviderContext, "secret" | "sealed">;

function planOf(path: string, cur: Current, want: Desired, ctx?: TextContext): Planned {
  const header: string[] = [];
  if (want.blocked) header.push(want.blocked);
  const contentChanged = want.next !== cur.text;
  const modeChange =
    want.next !== null && cur.st !== null && want.mode !== undefined && (cur.st.mode & 0o7777) !== want.mode;
  if (modeChange) header.push(`mode ${fmtMode(cur.st!.mode)} -> ${fmtMode(want.mode!)}`);
  if (cur.st === null && want.next !== null)
    header.push(`create file (mode ${fmtMode(want.mode ?? newFileMode(ctx))})`);
  if (want.next === null && cur.st !== null) header.push("remove file");
  const diff =
    header.map((l) => `# ${l}\n`).join("") +
    (contentChanged && !want.blocked
      ? ctx?.sealed
        ? sealedContentLine(bytes(cur.text), bytes(want.next))
        : textDiff(path, cur.text, want.next)
      : "");
  return { changed: Boolean(want.blocked) || contentChanged || modeChange, diff, contentChanged, modeChange };
}

/** check() of a text-editing provider: the plan as a diff, nothing touched. */
export async function checkText(
  path: string,
  desire: (cur: Current) => Desired,
  ctx?: TextContext,
): Promise<CheckResult> {
  const cur = await readCurrent(path);
  const want = desire(cur);
  const p = planOf(path, cur, want, ctx);
  return {
    changed: p.changed,
    diff: p.diff,
    observed: await observeText(path),
    ...(want.blocked ? { message: `apply would fail: ${want.blocked}` } : {}),
  };
}

/** apply() of a text-editing provider: writes only what check() reported. */
export async function applyText(
  path: string,
  desire: (cur: Current) => Desired,
  ctx?: TextContext,
): Promise<ApplyResult> {
  const cur = await readCurrent(path);
  const want = desire(cur);
  if (want.blocked) throw new SpecError(want.blocked);
  const p = planOf(path, cur, want, ctx);
  if (!p.changed)
    return { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: await observeText(path) };
  let message: string;
  if (want.next === null) {
    await unlink(path);
    message = "removed";
  } else if (p.contentChanged) {
    const mode = want.mode ?? (cur.st ? cur.st.mode & 0o7777 : newFileMode(ctx));
    await writeText(path, want.next, mode, cur.st);
    message = cur.st ? "content updated" : "created";
  } else {
    await chmod(path, want.mode!);
    message = "attributes updated";
  }
  return { changed: true, diff: p.diff, message, stdout: "", stderr: "", observed: await observeText(path) };
}

/** A provider that parses its spec into a target file and the text it wants there from the current one. */
export function textProvider<W extends { path: string }>(
  parse: (spec: Spec) => W,
  desire: (w: W, cur: Current) => Desired,
): Provider {
  return {
    check: async (spec, ctx) => {
      const w = parse(spec);
      return checkText(w.path, (cur) => desire(w, cur), ctx);
    },
    apply: async (spec, ctx) => {
      const w = parse(spec);
      return applyText(w.path, (cur) => desire(w, cur), ctx);
    },
  };
}
