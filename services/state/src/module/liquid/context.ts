import { OrchError } from "@orch/kit";
import { coerceParameter, isTemplated, resolveParameters, type ParameterDecl } from "../parameters.js";
import { TemplateError } from "../template.js";
import type { ModuleResource } from "../types.js";
import { compile, describeLiquidError, renderCompiled, TemplateSyntaxError, type V2Namespace } from "./compile.js";
import { specTemplates } from "./spec.js";

/** What a given parameter's template reads: no secrets (a parameter is recorded with the snapshot), no parameters. */
export const PARAMETER_NAMESPACES: readonly V2Namespace[] = ["values", "attributes", "tags", "agent"];

/** The context a parameter's template renders over. */
export interface ParameterBase {
  values: Readonly<Record<string, unknown>>;
  attributes: Readonly<Record<string, string>>;
  tags: Readonly<Record<string, string>>;
  agent: { node_id: string; name: string };
}

/** Checks a given parameter's template before it is stored; the problem's message, or undefined. */
export function parameterTemplateProblem(value: unknown): string | undefined {
  if (!isTemplated(value)) return undefined;
  try {
    compile(value, PARAMETER_NAMESPACES);
    return undefined;
  } catch (err) {
    if (!(err instanceof TemplateSyntaxError)) throw err;
    return `template line ${err.line}, column ${err.column}: ${err.message}`;
  }
}

/**
 * The parameters one module renders with for one agent: the module's declared defaults under the
 * given ones (parameters.ts), a template among them rendered over the agent's values, attributes,
 * tags and identity, then typed by its declaration. Any problem is a TemplateError naming the
 * module and the parameter: the operation fails before anything is sent.
 */
export function moduleParameters(
  module: string,
  declared: Readonly<Record<string, ParameterDecl>>,
  given: Readonly<Record<string, unknown>> | undefined,
  base: ParameterBase,
): Record<string, unknown> {
  let resolved: Record<string, unknown>;
  try {
    resolved = resolveParameters(declared, given);
  } catch (err) {
    if (err instanceof OrchError) throw new TemplateError(`${module}: ${err.message}`);
    throw err;
  }
  for (const [name, v] of Object.entries(resolved)) {
    if (!isTemplated(v)) continue;
    let rendered: string;
    try {
      rendered = renderCompiled(compile(v, PARAMETER_NAMESPACES), { ...base, parameters: {}, secrets: {} });
    } catch (err) {
      const d = err instanceof TemplateSyntaxError ? err : describeLiquidError(err);
      throw new TemplateError(`${module}: parameter '${name}' template line ${d.line}: ${d.message}`);
    }
    try {
      resolved[name] = coerceParameter(declared[name]!, rendered, name);
    } catch (err) {
      if (err instanceof OrchError) throw new TemplateError(`${module}: ${err.message}`);
      throw err;
    }
  }
  return resolved;
}

/** Top-level keys of a namespace a module reads; "all" when it reads the whole namespace or a computed key. */
export type KeysRead = ReadonlySet<string> | "all";

export interface ModuleReads {
  values: KeysRead;
  attributes: KeysRead;
  tags: KeysRead;
}

const reads = new WeakMap<readonly ModuleResource[], ModuleReads>();

/** What a version-2 module's templates read of values, attributes and tags (once per parsed module). */
export function moduleReads(resources: readonly ModuleResource[]): ModuleReads {
  let r = reads.get(resources);
  if (!r) {
    const keys = { values: new Set<string>(), attributes: new Set<string>(), tags: new Set<string>() };
    const all = new Set<keyof ModuleReads>();
    for (const res of resources)
      for (const t of specTemplates(res.spec))
        for (const ref of t.compiled.refs) {
          if (ref.ns !== "values" && ref.ns !== "attributes" && ref.ns !== "tags") continue;
          if (ref.key === undefined) all.add(ref.ns);
          else keys[ref.ns].add(ref.key);
        }
    r = {
      values: all.has("values") ? "all" : keys.values,
      attributes: all.has("attributes") ? "all" : keys.attributes,
      tags: all.has("tags") ? "all" : keys.tags,
    };
    reads.set(resources, r);
  }
  return r;
}

/** The part of `source` a module reads (all of it for "all"); keys it reads but `source` lacks are left out. */
export function pick<T>(source: Readonly<Record<string, T>>, keys: KeysRead): Record<string, T> {
  if (keys === "all") return { ...source };
  const out: Record<string, T> = {};
  for (const k of keys) if (Object.hasOwn(source, k)) out[k] = source[k]!;
  return out;
}
