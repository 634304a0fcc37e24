/**
 * The editor's look and keys. Colours are CSS variables (editor.css, with a light and a dark set
 * following prefers-color-scheme like theme.css), so one extension serves both themes and no
 * colour lives in script.
 */
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { EditorSelection, type Extension } from "@codemirror/state";
import { type Command, EditorView, keymap } from "@codemirror/view";
import { tags as t } from "@lezer/highlight";

const highlight = HighlightStyle.define([
  { tag: t.definition(t.propertyName), color: "var(--cm-key)" },
  { tag: [t.string, t.special(t.string)], color: "var(--cm-string)" },
  { tag: t.content, color: "var(--cm-value)" },
  { tag: [t.comment, t.lineComment], color: "var(--cm-comment)", fontStyle: "italic" },
  { tag: [t.keyword, t.meta, t.typeName, t.labelName], color: "var(--cm-meta)" },
  { tag: [t.separator, t.punctuation, t.squareBracket, t.brace], color: "var(--cm-punctuation)" },
]);

const theme = EditorView.theme({
  "&": {
    color: "var(--text)",
    backgroundColor: "var(--bg)",
    border: "1px solid var(--border)",
    borderRadius: "var(--radius)",
    fontSize: "0.875rem",
  },
  "&.cm-focused": { outline: "2px solid var(--focus)", outlineOffset: "1px" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.5" },
  ".cm-content": { caretColor: "var(--text)" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--text)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": {
    backgroundColor: "var(--cm-selection)",
  },
  ".cm-gutters": {
    backgroundColor: "var(--surface)",
    color: "var(--muted)",
    borderRight: "1px solid var(--border)",
    borderRadius: "var(--radius) 0 0 var(--radius)",
  },
  ".cm-activeLine": { backgroundColor: "var(--cm-active-line)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--surface-2)", color: "var(--text)" },
  ".cm-tooltip": { backgroundColor: "var(--surface)", color: "var(--text)", border: "1px solid var(--border)" },
  ".cm-diagnostic-error": { borderLeftColor: "var(--danger)" },
  ".cm-lintRange-error": { backgroundColor: "var(--danger-bg)" },
});

/** Select the whole document (the browser's own select-all only reaches the lines on screen). */
const selectAll: Command = (view) => {
  view.dispatch({ selection: { anchor: 0, head: view.state.doc.length }, userEvent: "select" });
  return true;
};

/** A new line keeps the current line's indentation: YAML nesting is indentation. */
const newlineKeepIndent: Command = (view) => {
  if (view.state.readOnly) return false;
  view.dispatch(
    view.state.changeByRange((range) => {
      const line = view.state.doc.lineAt(range.from);
      const indent = /^[ ]*/.exec(line.text)?.[0] ?? "";
      const insert = `\n${indent}`;
      return {
        changes: { from: range.from, to: range.to, insert },
        range: EditorSelection.cursor(range.from + insert.length),
      };
    }),
    { scrollIntoView: true, userEvent: "input" },
  );
  return true;
};

/**
 * Undo/redo and the standard editing keys, with ours first. Tab is left to the browser (moving
 * focus on; defaultKeymap binds no Tab), so the editor is never a keyboard trap.
 */
export const editorKeys: Extension = [
  history(),
  keymap.of([
    { key: "Mod-a", run: selectAll },
    { key: "Enter", run: newlineKeepIndent },
    ...historyKeymap,
    ...defaultKeymap,
  ]),
];

export const editorLook: Extension = [theme, syntaxHighlighting(highlight)];
