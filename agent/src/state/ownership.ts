import type { Stats } from "node:fs";
import { groupName, lookupGroup, lookupUser, userName } from "./accounts.js";
import { fmtMode } from "./spec.js";

export interface WantedAttrs {
  mode?: number | undefined;
  owner?: string | undefined;
  group?: string | undefined;
}

/** Ids of the wanted owner/group; `missing` names an account that does not exist (yet). */
export interface ResolvedOwner {
  uid?: number;
  gid?: number;
  missing: string[];
}

export async function resolveOwner(w: WantedAttrs): Promise<ResolvedOwner> {
  const out: ResolvedOwner = { missing: [] };
  if (w.owner !== undefined) {
    const u = await lookupUser(w.owner);
    if (u) out.uid = u.uid;
    else out.missing.push(`user ${w.owner}`);
  }
  if (w.group !== undefined) {
    const g = await lookupGroup(w.group);
    if (g) out.gid = g.gid;
    else out.missing.push(`group ${w.group}`);
  }
  return out;
}

/**
 * Lines describing how mode/owner/group would change on an existing path ("" lines omitted).
 * An owner that does not exist yet (a `user` resource earlier in the same apply creates it) still
 * counts as a change in plan; apply then resolves it or fails.
 */
export async function attrChanges(st: Stats, w: WantedAttrs, ids: ResolvedOwner): Promise<string[]> {
  const lines: string[] = [];
  if (w.mode !== undefined && (st.mode & 0o7777) !== w.mode)
    lines.push(`mode ${fmtMode(st.mode)} -> ${fmtMode(w.mode)}`);
  if (w.owner !== undefined && (ids.uid === undefined || ids.uid !== st.uid))
    lines.push(`owner ${await userName(st.uid)} -> ${w.owner}`);
  if (w.group !== undefined && (ids.gid === undefined || ids.gid !== st.gid))
    lines.push(`group ${await groupName(st.gid)} -> ${w.group}`);
  return lines;
}

export async function observeAttrs(st: Stats): Promise<{ mode: string; owner: string; group: string }> {
  return { mode: fmtMode(st.mode), owner: await userName(st.uid), group: await groupName(st.gid) };
}
