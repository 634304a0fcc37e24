import { lookupGroup, type GroupEntry } from "../accounts.js";
import { onlyKeys, optBool, optInt, state, str } from "../spec.js";
import { SpecError, type Provider, type Spec } from "../types.js";
import { ACCOUNT_NAME, applyAccountPlan } from "./user.js";

const FIELDS = ["name", "gid", "system", "state"];

function parse(spec: Spec) {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  if (!ACCOUNT_NAME.test(name)) throw new SpecError(`field "name" is not a valid group name`);
  return {
    name,
    gid: optInt(spec, "gid"),
    system: optBool(spec, "system") ?? false,
    state: state(spec, ["present", "absent"] as const, "present"),
  };
}

type Want = ReturnType<typeof parse>;

const observed = (g: GroupEntry | undefined) =>
  g ? { exists: true, gid: g.gid, members: g.members } : { exists: false };

function plan(w: Want, g: GroupEntry | undefined): { cmd: string[] | null; diff: string } {
  if (w.state === "absent")
    return g
      ? { cmd: ["groupdel", "--", w.name], diff: `remove group ${w.name} (gid ${g.gid})\n` }
      : { cmd: null, diff: "" };
  if (!g) {
    const args = [...(w.system ? ["-r"] : []), ...(w.gid !== undefined ? ["-g", String(w.gid)] : [])];
    return {
      cmd: ["groupadd", ...args, "--", w.name],
      diff: `create group ${w.name}${w.gid !== undefined ? ` gid ${w.gid}` : ""}${w.system ? " (system)" : ""}\n`,
    };
  }
  if (w.gid !== undefined && g.gid !== w.gid)
    return { cmd: ["groupmod", "-g", String(w.gid), "--", w.name], diff: `gid ${g.gid} -> ${w.gid}\n` };
  return { cmd: null, diff: "" };
}

export function groupProvider(): Provider {
  return {
    async check(spec) {
      const w = parse(spec);
      const g = await lookupGroup(w.name);
      const p = plan(w, g);
      return { changed: p.cmd !== null, diff: p.diff, observed: observed(g) };
    },
    async apply(spec, ctx) {
      const w = parse(spec);
      const g = await lookupGroup(w.name);
      return applyAccountPlan(plan(w, g), ctx, observed(g), async () => observed(await lookupGroup(w.name)));
    },
  };
}
