import { ArchiveError } from "./errors.js";

/**
 * The normalised path of an entry name as stored: relative, '/'-separated, without "." segments,
 * empty segments or a trailing "/" (so "./a//b/" is "a/b"); "" for the tree's root itself ("./",
 * which tar writes first when given a directory). Refused (unsafe_path): an empty name, NUL, an
 * absolute path, any ".." segment, and in a zip a backslash (a separator to Windows tools, so
 * "..\\x" could escape there) or a drive letter.
 */
export function entryPath(name: string, zip: boolean): string {
  const refuse = (why: string) => new ArchiveError("unsafe_path", why, name);
  if (name === "") throw refuse("the entry has an empty name");
  if (name.includes("\0")) throw refuse("the name contains NUL");
  if (zip && name.includes("\\")) throw refuse("the name contains a backslash");
  if (zip && /^[A-Za-z]:/.test(name)) throw refuse("the name starts with a drive letter");
  if (name.startsWith("/")) throw refuse("the name is an absolute path");
  const segments = name.split("/").filter((s) => s !== "" && s !== ".");
  if (segments.includes("..")) throw refuse("the name has a '..' segment");
  return segments.join("/");
}

/** Where following the link `target` from the link at `path` ends, or why it cannot stay inside the tree. */
export type Resolved = { inside: true } | { inside: false; why: string };

/** Hops through links before a resolution counts as a loop (Linux's own limit is 40). */
const MAX_HOPS = 40;

/**
 * Resolves a link's target inside the tree as the kernel would, following the links known so far
 * (`links`: path → target) wherever a component is one: a ".." that would climb above the root,
 * an absolute target met on the way, or a loop, means the link does not stay inside. Lexical
 * resolution alone is not enough: with "x/l" → ".." (the root), "y" → "x/l/.." is lexically "x"
 * but really the root's parent.
 */
export function resolveLink(path: string, target: string, links: ReadonlyMap<string, string>): Resolved {
  if (target.startsWith("/")) return { inside: false, why: "its target is an absolute path" };
  const at = path.split("/").slice(0, -1);
  const pending = target.split("/");
  let hops = 0;
  while (pending.length > 0) {
    const seg = pending.shift()!;
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (at.length === 0) return { inside: false, why: `its target ${JSON.stringify(target)} leads outside the tree` };
      at.pop();
      continue;
    }
    at.push(seg);
    const next = links.get(at.join("/"));
    if (next === undefined) continue;
    if (++hops > MAX_HOPS) return { inside: false, why: `its target ${JSON.stringify(target)} loops through links` };
    if (next.startsWith("/"))
      return {
        inside: false,
        why: `its target ${JSON.stringify(target)} goes through the absolute link ${at.join("/")}`,
      };
    at.pop();
    pending.unshift(...next.split("/"));
  }
  return { inside: true };
}
