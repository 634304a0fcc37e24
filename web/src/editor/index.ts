/**
 * The YAML editor, loaded on first use: CodeMirror is a large download that only the module pages
 * need, so the shell and every other page stay without it.
 */
import { lazy } from "react";

export type { LineProblem } from "./diagnostics";
export type { YamlEditorProps } from "./yaml-editor";

export const YamlEditor = lazy(() => import("./yaml-editor"));
