/**
 * What a tool left under a managed root, as one comparable text: every entry below the root,
 * sorted by relative path, as `path type mode uid:gid sha256|->target`. Two tools did the same
 * work on a host exactly when these texts are equal.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

export interface TreeEntry {
  rel: string;
  type: "file" | "dir" | "link" | "other";
  /** Permission bits in octal; "-" for symlinks (their own mode means nothing on Linux). */
  mode: string;
  owner: string;
  /** sha256 of a file, the target of a link, "" otherwise. */
  what: string;
}

export function readTree(root: string): TreeEntry[] {
  const out: TreeEntry[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir)) {
      const abs = join(dir, name);
      const rel = prefix ? `${prefix}/${name}` : name;
      const st = lstatSync(abs);
      const owner = `${st.uid}:${st.gid}`;
      const mode = (st.mode & 0o7777).toString(8).padStart(4, "0");
      if (st.isSymbolicLink()) out.push({ rel, type: "link", mode: "-", owner, what: readlinkSync(abs) });
      else if (st.isDirectory()) {
        out.push({ rel, type: "dir", mode, owner, what: "" });
        walk(abs, rel);
      } else if (st.isFile())
        out.push({
          rel,
          type: "file",
          mode,
          owner,
          what: createHash("sha256").update(readFileSync(abs)).digest("hex"),
        });
      else out.push({ rel, type: "other", mode, owner, what: "" });
    }
  };
  walk(root, "");
  return sortTree(out);
}

export const sortTree = (entries: TreeEntry[]): TreeEntry[] =>
  [...entries].sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));

export const treeText = (entries: TreeEntry[]): string =>
  sortTree(entries)
    .map((e) => `${e.rel} ${e.type} ${e.mode} ${e.owner} ${e.type === "link" ? `->${e.what}` : e.what}`)
    .join("\n");

export const treeSum = (entries: TreeEntry[]): string => createHash("sha256").update(treeText(entries)).digest("hex");

/** Lines present in one text and not the other, to say why two roots differ. */
export function treeDiff(a: TreeEntry[], b: TreeEntry[]): { onlyA: string[]; onlyB: string[] } {
  const la = treeText(a).split("\n").filter(Boolean);
  const lb = treeText(b).split("\n").filter(Boolean);
  const sa = new Set(la);
  const sb = new Set(lb);
  return { onlyA: la.filter((l) => !sb.has(l)), onlyB: lb.filter((l) => !sa.has(l)) };
}
