import { SECRET_MASK, secretMasker } from "@orch/contracts";

/**
 * Templates: `{{ attributes.X }}`, `{{ tags.X }}` and `{{ secrets.NAME }}` in any string of a
 * resource's spec, rendered per agent. Other `{{ ... }}` text is left alone (modules deploy Jinja
 * and Go templates as file content), except obvious misspellings of the three namespaces, which
 * are refused at upload.
 */

export const TEMPLATE_MARK = "{{";
export const NAMESPACES = ["attributes", "tags", "secrets"] as const;
export type Namespace = (typeof NAMESPACES)[number];

const EXPR = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z0-9_.\-/]+)\s*\}\}/g;
const TYPOS: Record<string, Namespace> = {
  attribute: "attributes",
  attr: "attributes",
  attrs: "attributes",
  tag: "tags",
  secret: "secrets",
};

export interface TemplateRef {
  ns: Namespace;
  key: string;
}

const isNamespace = (s: string): s is Namespace => (NAMESPACES as readonly string[]).includes(s);

/** Expressions in one string; `typo` names a misspelt namespace (e.g. `{{ secret.x }}`). */
export function scanTemplate(s: string): { refs: TemplateRef[]; typo?: { found: string; meant: Namespace } } {
  const refs: TemplateRef[] = [];
  if (!s.includes(TEMPLATE_MARK)) return { refs };
  for (const m of s.matchAll(EXPR)) {
    const ns = m[1]!;
    if (isNamespace(ns)) refs.push({ ns, key: m[2]! });
    else if (TYPOS[ns]) return { refs, typo: { found: `${ns}.${m[2]}`, meant: TYPOS[ns] } };
  }
  return { refs };
}

/** Calls `fn` on every string inside a JSON value, rebuilding it with the returned strings. */
export function mapStrings(v: unknown, fn: (s: string) => string): unknown {
  if (typeof v === "string") return fn(v);
  if (Array.isArray(v)) return v.map((x) => mapStrings(x, fn));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapStrings(x, fn)]));
  return v;
}

/** Every template reference in a JSON value. */
export function refsIn(v: unknown): TemplateRef[] {
  const out: TemplateRef[] = [];
  mapStrings(v, (s) => {
    out.push(...scanTemplate(s).refs);
    return s;
  });
  return out;
}

export interface RenderInputs {
  attributes: Readonly<Record<string, string>>;
  tags: Readonly<Record<string, string>>;
  /** Resolved secret values by name; never stored. */
  secrets: ReadonlyMap<string, string>;
}

export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TemplateError";
  }
}

const has = (o: Readonly<Record<string, string>>, k: string) => Object.hasOwn(o, k);

/**
 * Renders one JSON value. A missing attribute, tag or (unresolved) secret is a TemplateError
 * naming the expression; the value of a secret never appears in an error.
 */
export function renderValue(v: unknown, inputs: RenderInputs, where: string): unknown {
  return mapStrings(v, (s) => {
    if (!s.includes(TEMPLATE_MARK)) return s;
    return s.replace(EXPR, (whole, ns: string, key: string) => {
      switch (ns) {
        case "attributes":
          if (!has(inputs.attributes, key))
            throw new TemplateError(`${where}: the agent has no attribute '${key}' ({{ attributes.${key} }})`);
          return inputs.attributes[key]!;
        case "tags":
          if (!has(inputs.tags, key))
            throw new TemplateError(`${where}: the agent has no tag '${key}' ({{ tags.${key} }})`);
          return inputs.tags[key]!;
        case "secrets": {
          const value = inputs.secrets.get(key);
          if (value === undefined) throw new TemplateError(`${where}: secret '${key}' was not resolved`);
          return value;
        }
        default:
          return whole;
      }
    });
  });
}

export const MASK = SECRET_MASK;

/**
 * Replaces every secret value, its common encodings and its reversal with `***` (the rule lives in
 * @orch/contracts: the agent masks with the same one before answering).
 */
export function masker(values: Iterable<string>): (s: string) => string {
  const all = [...values];
  return all.length ? secretMasker(all) : noMask;
}

/** The masker of an operation without secrets: callers may skip copying what it would leave unchanged. */
export const noMask = (s: string): string => s;
