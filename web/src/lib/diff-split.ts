/**
 * Splits an agent's diff text: a file diff is `# ` attribute notes, then a unified diff (`---
 * current` / `+++ desired`); other resource types send a line per change, which is text, not a
 * diff. Kept apart from diff-html.ts so the text part needs no diff2html (that one loads lazily).
 */

export type DiffMode = "unified" | "split";

export interface DiffParts {
  /** Lines shown as plain text (attribute changes, or a non-file resource's description). */
  notes: string[];
  /** The unified diff part, from its `---` header on; undefined when there is none. */
  unified: string | undefined;
}

/** Splits the diff text into its plain-text notes and the unified diff that follows them. */
export function splitDiff(text: string): DiffParts {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  for (let i = 0; i < lines.length - 1; i++) {
    const line = lines[i] ?? "";
    const next = lines[i + 1] ?? "";
    const header = line.startsWith("--- ") && next.startsWith("+++ ");
    if (header || line.startsWith("@@ ")) {
      // jsdiff's "Index: <path>" and "====" lines belong to the diff's header, not the notes.
      let start = i;
      while (start > 0 && /^(Index: |={3,}$)/.test(lines[start - 1] ?? "")) start--;
      // A bare hunk gets headers so diff2html parses it as one file.
      const body = lines.slice(start).join("\n");
      return { notes: trimBlank(lines.slice(0, start)), unified: header ? body : `--- current\n+++ desired\n${body}` };
    }
  }
  return { notes: trimBlank(lines), unified: undefined };
}

function trimBlank(lines: string[]): string[] {
  let end = lines.length;
  while (end > 0 && (lines[end - 1] ?? "").trim() === "") end--;
  return lines.slice(0, end);
}
