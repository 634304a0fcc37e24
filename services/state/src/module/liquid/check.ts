import { WORLD_READABLE, type ResourceType } from "../types.js";
import { FieldTemplateError, specTemplates, type FieldPath } from "./spec.js";

/**
 * Upload checks of a version-2 resource's templates: each string parses, uses only known filters
 * and tags, reads only the context's namespaces and names its secrets literally.
 */

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
  const readable = (WORLD_READABLE as Partial<Record<ResourceType, { fields: readonly string[]; why: string }>>)[type];
  for (const field of readable?.fields ?? []) {
    const name = secretIn(field);
    if (name !== undefined) return { path: [field], message: `must not read {{ secrets.${name} }}: ${readable!.why}` };
  }
  return undefined;
}

/** For a top-level field of the spec, the first secret its templates read (undefined: none). */
export function secretReader(spec: Readonly<Record<string, unknown>>): (field: string) => string | undefined {
  const templates = specTemplates(spec);
  return (field) => templates.find((t) => t.path[0] === field && t.compiled.secrets.length > 0)?.compiled.secrets[0];
}
