import { lookupGroup, lookupUser, supplementaryGroups, type PasswdEntry } from "../accounts.js";
import { budget, run, type RunResult } from "../proc.js";
import { onlyKeys, optBool, optInt, optStr, optStrList, state, str } from "../spec.js";
import { SpecError, type ApplyResult, type Provider, type ProviderContext, type Spec } from "../types.js";

const FIELDS = ["name", "uid", "group", "gid", "groups", "home", "shell", "comment", "system", "state"];
const CMD_MS = 60_000;
export const ACCOUNT_NAME = /^[a-z_][a-z0-9_.-]{0,31}\$?$/;

interface Want {
  name: string;
  state: "present" | "absent";
  uid: number | undefined;
  /** Primary group: a name or a numeric gid. */
  gid: string | undefined;
  comment: string | undefined;
  groups: string[] | undefined;
  home: string | undefined;
  shell: string | undefined;
  system: boolean;
}

function parse(spec: Spec): Want {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  if (!ACCOUNT_NAME.test(name)) throw new SpecError(`field "name" is not a valid user name`);
  // The primary group is `group` (name or gid); `gid` is accepted as its numeric alias.
  const primary = (key: string) =>
    spec[key] === undefined || spec[key] === null
      ? undefined
      : typeof spec[key] === "number"
        ? String(optInt(spec, key))
        : str(spec, key);
  const group = primary("group");
  const gidAlias = primary("gid");
  if (group !== undefined && gidAlias !== undefined && group !== gidAlias)
    throw new SpecError(`fields "group" and "gid" disagree; give one`);
  const gid = group ?? gidAlias;
  const comment = optStr(spec, "comment");
  if (comment !== undefined && /[:\n]/.test(comment))
    throw new SpecError(`field "comment" must not contain ':' or a newline`);
  const groups = optStrList(spec, "groups");
  for (const g of groups ?? [])
    if (!ACCOUNT_NAME.test(g)) throw new SpecError(`field "groups" has an invalid group name "${g}"`);
  const home = optStr(spec, "home");
  if (home !== undefined && !home.startsWith("/")) throw new SpecError(`field "home" must be an absolute path`);
  return {
    name,
    state: state(spec, ["present", "absent"] as const, "present"),
    uid: optInt(spec, "uid"),
    gid,
    comment,
    groups,
    home,
    shell: optStr(spec, "shell"),
    system: optBool(spec, "system") ?? false,
  };
}

interface Current {
  entry: PasswdEntry | undefined;
  groups: string[];
}

async function current(name: string): Promise<Current> {
  const entry = await lookupUser(name);
  return { entry, groups: entry ? await supplementaryGroups(name) : [] };
}

const observed = (c: Current) =>
  c.entry
    ? {
        exists: true,
        uid: c.entry.uid,
        gid: c.entry.gid,
        comment: c.entry.comment,
        home: c.entry.home,
        shell: c.entry.shell,
        groups: c.groups,
      }
    : { exists: false };

/** usermod flags for what differs, with a description line each. */
async function differences(w: Want, c: Current): Promise<{ flags: string[]; lines: string[] }> {
  const e = c.entry!;
  const flags: string[] = [];
  const lines: string[] = [];
  const add = (flag: string, value: string, line: string) => {
    flags.push(flag, value);
    lines.push(line);
  };
  if (w.uid !== undefined && e.uid !== w.uid) add("-u", String(w.uid), `uid ${e.uid} -> ${w.uid}`);
  if (w.gid !== undefined) {
    const g = await lookupGroup(w.gid);
    if (!g || g.gid !== e.gid) add("-g", w.gid, `gid ${e.gid} -> ${w.gid}`);
  }
  if (w.groups !== undefined) {
    const want = [...new Set(w.groups)].sort();
    if (want.join(",") !== c.groups.join(","))
      add("-G", want.join(","), `groups [${c.groups.join(", ")}] -> [${want.join(", ")}]`);
  }
  if (w.comment !== undefined && e.comment !== w.comment)
    add("-c", w.comment, `comment "${e.comment}" -> "${w.comment}"`);
  if (w.home !== undefined && e.home !== w.home) add("-d", w.home, `home ${e.home} -> ${w.home}`);
  if (w.shell !== undefined && e.shell !== w.shell) add("-s", w.shell, `shell ${e.shell} -> ${w.shell}`);
  return { flags, lines };
}

function createArgs(w: Want): string[] {
  const a: string[] = [];
  if (w.system) a.push("-r");
  else a.push("-m"); // regular users get their home directory created; system users do not
  if (w.uid !== undefined) a.push("-u", String(w.uid));
  if (w.gid !== undefined) a.push("-g", w.gid);
  if (w.groups?.length) a.push("-G", [...new Set(w.groups)].join(","));
  if (w.comment !== undefined) a.push("-c", w.comment);
  if (w.home !== undefined) a.push("-d", w.home);
  if (w.shell !== undefined) a.push("-s", w.shell);
  return [...a, "--", w.name];
}

async function plan(w: Want, c: Current): Promise<{ cmd: string[] | null; diff: string }> {
  if (w.state === "absent")
    return c.entry
      ? { cmd: ["userdel", "--", w.name], diff: `remove user ${w.name} (uid ${c.entry.uid}; home directory kept)\n` }
      : { cmd: null, diff: "" };
  if (!c.entry)
    return {
      cmd: ["useradd", ...createArgs(w)],
      diff: `create user ${w.name}${w.uid !== undefined ? ` uid ${w.uid}` : ""}${w.system ? " (system)" : ""}\n`,
    };
  const d = await differences(w, c);
  return d.flags.length
    ? { cmd: ["usermod", ...d.flags, "--", w.name], diff: d.lines.map((l) => `${l}\n`).join("") }
    : { cmd: null, diff: "" };
}

const runAccountCmd = (cmd: string[], ctx: ProviderContext): Promise<RunResult> =>
  run(cmd[0]!, cmd.slice(1), { timeoutMs: budget(CMD_MS, ctx.deadline) });

/** Apply step shared by user and group: run the planned command (if any) and observe the result. */
export async function applyAccountPlan(
  p: { cmd: string[] | null; diff: string },
  ctx: ProviderContext,
  before: Record<string, unknown>,
  after: () => Promise<Record<string, unknown>>,
): Promise<ApplyResult> {
  if (!p.cmd) return { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: before };
  const r = await runAccountCmd(p.cmd, ctx);
  const ok = r.code === 0;
  return {
    changed: true,
    failed: !ok,
    diff: p.diff,
    message: ok
      ? p.diff.trim()
      : `${p.cmd[0]} exited with code ${r.code ?? (r.spawnError ? `none (${r.spawnError})` : r.timedOut ? "none (timed out)" : r.signal)}`,
    stdout: r.stdout,
    stderr: r.stderr,
    observed: await after(),
  };
}

export function userProvider(): Provider {
  return {
    async check(spec) {
      const w = parse(spec);
      const c = await current(w.name);
      const p = await plan(w, c);
      return { changed: p.cmd !== null, diff: p.diff, observed: observed(c) };
    },
    async apply(spec, ctx) {
      const w = parse(spec);
      const c = await current(w.name);
      const p = await plan(w, c);
      return applyAccountPlan(p, ctx, observed(c), async () => observed(await current(w.name)));
    },
  };
}
