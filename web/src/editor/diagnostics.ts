/**
 * Problems reported against a line (and column) of the YAML, as CodeMirror lint diagnostics. Kept
 * free of the DOM so it is unit-tested in Node.
 */
import type { Diagnostic } from "@codemirror/lint";
import type { Text } from "@codemirror/state";

/** A problem the API (or the page) reports: 1-based line and column, as the YAML parser counts them. */
export interface LineProblem {
  line: number;
  column?: number | undefined;
  message: string;
}

/**
 * One error diagnostic per problem, covering its line from the column to the end (the whole line
 * when the column is missing or past the text). A line beyond the document marks the last line.
 */
export function toDiagnostics(doc: Text, problems: readonly LineProblem[]): Diagnostic[] {
  return problems.map((p) => {
    const n = Math.min(Math.max(1, Math.trunc(p.line) || 1), doc.lines);
    const line = doc.line(n);
    const col = Math.trunc(p.column ?? 1) || 1;
    const from = col > 1 && col - 1 < line.length ? line.from + col - 1 : line.from;
    return { from, to: line.to, severity: "error", message: p.message, source: "API" };
  });
}
