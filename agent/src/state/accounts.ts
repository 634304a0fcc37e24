import { run } from "./proc.js";

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  comment: string;
  home: string;
  shell: string;
}
export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

const LOOKUP_MS = 10_000;

/** `getent` (not /etc/passwd) so directory-service accounts count too. Accepts a name or a numeric id. */
async function getent(db: "passwd" | "group", key: string): Promise<string[] | undefined> {
  const r = await run("getent", [db, key], { timeoutMs: LOOKUP_MS });
  if (r.spawnError) throw new Error(`getent unavailable: ${r.spawnError}`);
  if (r.code === 2) return undefined; // key not found
  if (r.code !== 0) throw new Error(`getent ${db} failed (exit ${r.code ?? r.signal})`);
  const line = r.stdout.split("\n")[0] ?? "";
  return line.split(":");
}

export async function lookupUser(key: string | number): Promise<PasswdEntry | undefined> {
  const f = await getent("passwd", String(key));
  if (!f) return undefined;
  return {
    name: f[0] ?? "",
    uid: Number(f[2]),
    gid: Number(f[3]),
    comment: f[4] ?? "",
    home: f[5] ?? "",
    shell: f[6] ?? "",
  };
}

export async function lookupGroup(key: string | number): Promise<GroupEntry | undefined> {
  const f = await getent("group", String(key));
  if (!f) return undefined;
  return { name: f[0] ?? "", gid: Number(f[2]), members: (f[3] ?? "").split(",").filter(Boolean) };
}

/** Names of the groups listing `user` as a member (its supplementary groups). */
export async function supplementaryGroups(user: string): Promise<string[]> {
  const r = await run("getent", ["group"], { timeoutMs: LOOKUP_MS });
  if (r.code !== 0) throw new Error(`getent group failed (exit ${r.code ?? r.signal})`);
  return r.stdout
    .split("\n")
    .map((l) => l.split(":"))
    .filter((f) => (f[3] ?? "").split(",").includes(user))
    .map((f) => f[0] ?? "")
    .sort();
}

export const userName = async (uid: number) => (await lookupUser(uid))?.name ?? String(uid);
export const groupName = async (gid: number) => (await lookupGroup(gid))?.name ?? String(gid);
