import { ArchiveError } from "./errors.js";
import { resolveLink } from "./paths.js";

type Node = "file" | "directory" | "symlink" | "parent";

/**
 * The tree an archive's entries make so far, refusing what would make it ambiguous or let an entry
 * land outside it: a path twice, an entry inside a file or a link (writing "l/x" through a link
 * "l" writes wherever "l" points), a file or link where earlier entries made a directory, a link
 * whose target leaves the tree. Paths are already normalised (entryPath).
 */
export class Tree {
  /** Every path seen, and each of their parent directories ("parent" when no entry names it). */
  private readonly nodes = new Map<string, Node>();
  private readonly links = new Map<string, string>();
  /** Stored names of the links, for the final check's errors. */
  private readonly linkNames = new Map<string, string>();

  /** Adds an entry (`name`: as stored, for errors); a symlink's target is checked against the links known so far. */
  add(kind: "file" | "directory" | "symlink", path: string, name: string, target?: string): void {
    const refuse = (why: string) => new ArchiveError("unsafe_path", why, name);
    const seen = this.nodes.get(path);
    if (seen !== undefined && seen !== "parent") throw refuse(`${path} appears twice in the archive`);
    if (seen === "parent" && kind !== "directory")
      throw refuse(`${path} is a ${kind} but earlier entries are inside it (a directory)`);
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      const node = this.nodes.get(dir);
      if (node === "file") throw refuse(`${path} is inside ${dir}, which is a file`);
      if (node === "symlink") throw refuse(`${path} is inside ${dir}, which is a symlink`);
      if (node === undefined) this.nodes.set(dir, "parent");
    }
    this.nodes.set(path, kind);
    if (kind !== "symlink" || target === undefined) return;
    if (target === "") throw new ArchiveError("unsafe_link", "the link's target is empty", name);
    if (target.includes("\0")) throw new ArchiveError("unsafe_link", "the link's target contains NUL", name);
    this.links.set(path, target);
    this.linkNames.set(path, name);
    this.checkLink(path, target, name);
  }

  /**
   * Checks every link again now that all are known: one found unsafe only through a later link
   * fails here, after its entries were read (a consumer discards everything on any refusal).
   */
  finish(): void {
    for (const [path, target] of this.links) this.checkLink(path, target, this.linkNames.get(path) ?? path);
  }

  private checkLink(path: string, target: string, name: string): void {
    const r = resolveLink(path, target, this.links);
    if (!r.inside) throw new ArchiveError("unsafe_link", r.why, name);
  }
}
