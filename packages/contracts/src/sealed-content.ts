// The one rule for a managed path whose content was written from a secret ("sealed"), used by the
// agent (which remembers such paths and seals its answers) and by the state service (which seals
// again what it stores, from its own snapshots: defence in depth).

/**
 * Resource types whose diff and observed state describe a file's content, and the spec field that
 * names that file. A plan or drift check of one of these on a sealed path shows no content.
 */
export const CONTENT_PATH_FIELDS: Readonly<Record<string, string>> = { file: "path", line: "path", block: "path" };

/**
 * Fields naming a file that a resource rendered with a secret leaves holding it: the content types'
 * path, and an exec's `creates` (a script given the secret in its env usually writes it there).
 */
export const SECRET_PATH_FIELDS: Readonly<Record<string, string>> = { ...CONTENT_PATH_FIELDS, exec: "creates" };

/** Why a sealed path's content is not shown (in every diff line that stands for it). */
export const SEALED_NOTE = "not shown: the file holds content rendered from a secret";

const side = (bytes: number | null) => (bytes === null ? "(none)" : `${bytes} bytes`);

/**
 * The diff line standing for a sealed path's content change: sizes only. No hash either: a plain
 * hash of content rendered with a secret is an offline guessing oracle.
 */
export const sealedContentLine = (before: number | null, after: number | null): string =>
  `content ${side(before)} -> ${side(after)} (${SEALED_NOTE})\n`;

const SEALED_LINE = new RegExp(
  `^content (\\(none\\)|\\d+ bytes) -> (\\(none\\)|\\d+ bytes) \\(${SEALED_NOTE.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\)$`,
);

/**
 * A content type's diff with its content removed: the `# ` lines (attributes: mode, owner, "create
 * file") and sealed content lines are kept; anything else (a unified diff, a hash summary) becomes
 * one sealed line without sizes. Idempotent, so both sides apply it.
 */
export function sealDiff(diff: string): string {
  if (!diff) return diff;
  const kept: string[] = [];
  let dropped = false;
  for (const line of diff.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("# ") || SEALED_LINE.test(line)) kept.push(`${line}\n`);
    else dropped = true;
  }
  if (dropped) kept.push(`content changed (${SEALED_NOTE})\n`);
  return kept.join("");
}

/** Observed state of a sealed path: no content hash, and says it is sealed. */
export function sealObserved(observed: Record<string, unknown>): Record<string, unknown> {
  const { sha256: _hash, content: _content, ...rest } = observed;
  return { ...rest, sealed: true };
}

/** A path as both sides compare it: `posix.normalize` without `//`, `/./` or a trailing slash. */
export function sealKey(path: string): string {
  const parts: string[] = [];
  for (const p of path.split("/")) if (p !== "" && p !== ".") parts.push(p);
  return `/${parts.join("/")}`;
}
