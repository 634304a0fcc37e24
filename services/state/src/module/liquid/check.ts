import type { ResourceType } from "../types.js";
import { FieldTemplateError, specTemplates, type FieldPath } from "./spec.js";

/**
 * Upload checks of a version-2 resource's templates: each string parses, uses only known filters
 * and tags, reads only the context's namespaces and names its secrets literally.
 */

/**
 * Fields written into a file every local user can read (a cron.d file). The schema refuses a
 * plain `{{ secrets.x }}` there; this catches every other way a version-2 template reads one.
 */
const WORLD_READABLE: Partial<Record<ResourceType, readonly string[]>> = { cron: ["schedule", "env"] };

export interface TemplateProblem {
  path: FieldPath;
  message: string;
  /** The line inside the template string, when the problem is at one. */
  line?: number;
}

/** The first refused template of a spec, or undefined. */
export function templateProblem(
  type: ResourceType,
  spec: Readonly<Record<string, unknown>>,
): TemplateProblem | undefined {
  try {
    specTemplates(spec);
  } catch (err) {
    if (!(err instanceof FieldTemplateError)) throw err;
    return {
      path: err.path,
      message: `template line ${err.line}, column ${err.column}: ${err.message}`,
      line: err.line,
    };
  }
  const secretIn = secretReader(spec);
  for (const field of WORLD_READABLE[type] ?? []) {
    const name = secretIn(field);
    if (name !== undefined)
      return {
        path: [field],
        message: `must not read {{ secrets.${name} }}: a cron.d file is readable by every local user`,
      };
  }
  return undefined;
}

/** For a top-level field of the spec, the first secret its templates read (undefined: none). */
export function secretReader(spec: Readonly<Record<string, unknown>>): (field: string) => string | undefined {
  const templates = specTemplates(spec);
  return (field) => templates.find((t) => t.path[0] === field && t.compiled.secrets.length > 0)?.compiled.secrets[0];
}
