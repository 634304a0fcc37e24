/**
 * Turns an agent's diff text into HTML with diff2html (its `html` only: Diff2HtmlUI would pull in
 * highlight.js). diff2html escapes every line and name it renders, so the HTML is safe to insert;
 * secrets arrive masked as `***`.
 */
import { type Diff2HtmlConfig, html } from "diff2html";

export type { DiffMode, DiffParts } from "./diff-split";
import type { DiffMode } from "./diff-split";

/** HTML for a unified diff (escaped by diff2html), line-by-line or side by side. */
export function diffHtml(unified: string, mode: DiffMode): string {
  return html(unified, {
    drawFileList: false,
    outputFormat: mode === "split" ? "side-by-side" : "line-by-line",
    // Follows the console's light/dark (prefers-color-scheme), like theme.css.
    colorScheme: "auto" as Diff2HtmlConfig["colorScheme"],
    matching: "none",
  });
}
