/**
 * A CodeMirror 6 YAML editor: highlighting, line numbers, lint markers for problems the API
 * reported, and a read-only mode for viewing. Controlled loosely: `value` replaces the document
 * only when it differs from what the editor holds, so typing never fights the prop.
 */
import { yaml } from "@codemirror/lang-yaml";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { Compartment, EditorState } from "@codemirror/state";
import { EditorView, highlightActiveLine, highlightActiveLineGutter, lineNumbers } from "@codemirror/view";
import { useEffect, useRef } from "react";
import { type LineProblem, toDiagnostics } from "./diagnostics";
import "./editor.css";
import { editorKeys, editorLook } from "./extensions";

export interface YamlEditorProps {
  value: string;
  onChange?: (value: string) => void;
  /** The accessible name of the editable element (there is no visible <label> to point at it). */
  label: string;
  readOnly?: boolean;
  problems?: readonly LineProblem[];
  /** Ids of elements describing the editor (e.g. the error message). */
  describedBy?: string | undefined;
}

function accessMode(readOnly: boolean, label: string, describedBy: string | undefined) {
  return [
    EditorState.readOnly.of(readOnly),
    EditorView.editable.of(!readOnly),
    EditorView.contentAttributes.of({
      "aria-label": label,
      ...(readOnly ? { "aria-readonly": "true" } : {}),
      ...(describedBy ? { "aria-describedby": describedBy } : {}),
    }),
  ];
}

export default function YamlEditor({
  value,
  onChange,
  label,
  readOnly = false,
  problems,
  describedBy,
}: YamlEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const access = useRef(new Compartment());
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;

  // Created once; the props below are pushed in by the effects that follow.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the view is built once and updated by effects
  useEffect(() => {
    const v = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          highlightActiveLine(),
          lintGutter(),
          yaml(),
          editorLook,
          editorKeys,
          EditorView.lineWrapping,
          access.current.of(accessMode(readOnly, label, describedBy)),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) onChangeRef.current?.(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
  }, []);

  useEffect(() => {
    view.current?.dispatch({ effects: access.current.reconfigure(accessMode(readOnly, label, describedBy)) });
  }, [readOnly, label, describedBy]);

  useEffect(() => {
    const v = view.current;
    if (!v || v.state.doc.toString() === value) return;
    v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  useEffect(() => {
    const v = view.current;
    if (!v) return;
    v.dispatch(setDiagnostics(v.state, toDiagnostics(v.state.doc, problems ?? [])));
  }, [problems]);

  return <div ref={host} className="yaml-editor" />;
}
