/**
 * What the upload page reads from the YAML text and from the API's refusal of it. Pure (no DOM, no
 * CodeMirror) so it is unit-tested.
 */
import { ApiError } from "@orch/client";
import type { LineProblem } from "../../editor";

const NAME_LINE = /^name[ \t]*:[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s#]+))?/m;

/** The module's top-level `name:` (the API wants it in the request too); undefined when absent. */
export function moduleNameOf(content: string): string | undefined {
  const m = NAME_LINE.exec(content);
  if (!m) return undefined;
  const name = (m[1] ?? m[2] ?? m[3] ?? "").trim();
  return name === "" ? undefined : name;
}

/** The 1-based line of the top-level `name:` key, if there is one. */
export function nameLineOf(content: string): number | undefined {
  const m = NAME_LINE.exec(content);
  if (!m) return undefined;
  return content.slice(0, m.index).split("\n").length;
}

function lineProblem(v: Record<string, unknown>, message: string): LineProblem | undefined {
  const line = typeof v.line === "number" && Number.isInteger(v.line) && v.line > 0 ? v.line : undefined;
  if (line === undefined) return undefined;
  const column = typeof v.column === "number" && Number.isInteger(v.column) && v.column > 0 ? v.column : undefined;
  return { line, column, message };
}

/**
 * The YAML line a refusal points at: the state service puts `line`/`column` in the problem body
 * (docs/modules.md, "Validation errors"); an `errors[]` entry carrying them is read the same way;
 * a refused `name` (the gateway checks it before the YAML) points at the `name:` line.
 */
export function yamlProblemOf(error: unknown, content: string): LineProblem | undefined {
  if (!(error instanceof ApiError) || error.status !== 400) return undefined;
  const p = error.problem;
  const top = lineProblem(p, p.detail);
  if (top) return top;
  const errors = Array.isArray(p.errors) ? (p.errors as Record<string, unknown>[]) : [];
  for (const e of errors) {
    const message = typeof e.message === "string" ? e.message : p.detail;
    const at = lineProblem(e, message);
    if (at) return at;
  }
  const nameError = errors.find((e) => e.field === "name");
  if (nameError) {
    const line = nameLineOf(content);
    if (line !== undefined)
      return { line, message: typeof nameError.message === "string" ? nameError.message : p.detail };
  }
  return undefined;
}

/** A starting point for a new module: valid as it is, and shows the shape. */
export const MODULE_TEMPLATE = `name: my-module
description: what this module keeps in place
resources:
  - id: motd
    type: file
    path: /etc/motd
    content: "managed by orch on {{ attributes.hostname }}\\n"
    mode: "0644"
`;
