import {
  compile,
  describeLiquidError,
  isTemplateV2,
  renderCompiled,
  TemplateSyntaxError,
  type Compiled,
  type TemplateContext,
} from "./compile.js";

/** Where in a resource's spec a string is: `["env", "TOKEN"]`, `["groups", 0]`. */
export type FieldPath = ReadonlyArray<string | number>;

export interface SpecTemplate {
  path: FieldPath;
  compiled: Compiled;
}

/** A template of a spec that cannot be used, with the field it is in and its line in the template. */
export class FieldTemplateError extends Error {
  constructor(
    message: string,
    readonly path: FieldPath,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
    this.name = "FieldTemplateError";
  }
}

function walk(v: unknown, path: Array<string | number>, out: SpecTemplate[]): void {
  if (typeof v === "string") {
    if (!isTemplateV2(v)) return;
    try {
      out.push({ path: [...path], compiled: compile(v) });
    } catch (err) {
      if (!(err instanceof TemplateSyntaxError)) throw err;
      throw new FieldTemplateError(err.message, [...path], err.line, err.column);
    }
  } else if (Array.isArray(v)) {
    v.forEach((x, i) => {
      path.push(i);
      walk(x, path, out);
      path.pop();
    });
  } else if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      path.push(k);
      walk(x, path, out);
      path.pop();
    }
  }
}

/** Templates of a spec, parsed once per spec object (every operation of a fan-out shares the parsed module). */
const bySpec = new WeakMap<object, readonly SpecTemplate[]>();

/** Every template string of a spec, parsed and analysed; throws FieldTemplateError for the first refused. */
export function specTemplates(spec: Readonly<Record<string, unknown>>): readonly SpecTemplate[] {
  let t = bySpec.get(spec);
  if (!t) {
    const out: SpecTemplate[] = [];
    walk(spec, [], out);
    t = out;
    bySpec.set(spec, t);
  }
  return t;
}

/** Secret names a spec reads, sorted. */
export function specSecrets(spec: Readonly<Record<string, unknown>>): string[] {
  return [...new Set(specTemplates(spec).flatMap((t) => t.compiled.secrets))].sort();
}

function renderAt(v: unknown, ctx: TemplateContext, path: Array<string | number>): unknown {
  if (typeof v === "string") {
    if (!isTemplateV2(v)) return v;
    try {
      return renderCompiled(compile(v), ctx);
    } catch (err) {
      const d = err instanceof TemplateSyntaxError ? err : describeLiquidError(err);
      throw new FieldTemplateError(d.message, [...path], d.line, d.column);
    }
  }
  if (Array.isArray(v))
    return v.map((x, i) => {
      path.push(i);
      const r = renderAt(x, ctx, path);
      path.pop();
      return r;
    });
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      path.push(k);
      out[k] = renderAt(x, ctx, path);
      path.pop();
    }
    return out;
  }
  return v;
}

/**
 * Renders every template string of a spec over one agent's context. A typed field (mode, uid, a
 * boolean) written as a template renders to a string, which the agent parses as it does today.
 * Throws FieldTemplateError naming the field and the template's line.
 */
export function renderSpec(spec: Readonly<Record<string, unknown>>, ctx: TemplateContext): Record<string, unknown> {
  if (specTemplates(spec).length === 0) return spec as Record<string, unknown>;
  return renderAt(spec, ctx, []) as Record<string, unknown>;
}
