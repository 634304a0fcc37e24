import { LiquidError, type Template } from "liquidjs";
import { engine, RENDER_OPTIONS } from "./engine.js";

/**
 * One template string of a version-2 module, parsed once and analysed statically: which
 * namespaces and keys it reads. The analysis is what upload checks (unknown variables, misspelt
 * namespaces, secret names), what the secrets of an operation are resolved from before anything
 * renders, and what a snapshot records to re-render exactly.
 */

export const V2_NAMESPACES = ["values", "parameters", "attributes", "tags", "secrets", "agent"] as const;
export type V2Namespace = (typeof V2_NAMESPACES)[number];
/** What `agent` holds. */
export const AGENT_KEYS = ["node_id", "name"] as const;

const TYPOS: Record<string, V2Namespace> = {
  value: "values",
  vals: "values",
  param: "parameters",
  params: "parameters",
  parameter: "parameters",
  attribute: "attributes",
  attr: "attributes",
  attrs: "attributes",
  tag: "tags",
  secret: "secrets",
  agents: "agent",
  node: "agent",
};

/** `{{ x }}` or `{% tag %}`: a string without either is a literal in a version-2 module. */
export const isTemplateV2 = (s: string): boolean => s.includes("{{") || s.includes("{%");

/** A namespace read: `key` is the top-level key, undefined when the whole namespace or a computed key is read. */
export interface V2Ref {
  ns: V2Namespace;
  key?: string;
  line: number;
  column: number;
}

/** A template refused before rendering: syntax, an unknown filter or variable, a secret read by a computed name. */
export class TemplateSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
    this.name = "TemplateSyntaxError";
  }
}

export interface Compiled {
  readonly source: string;
  readonly id: number;
  readonly tpl: Template[];
  readonly refs: readonly V2Ref[];
  /** Secret names read, sorted. */
  readonly secrets: readonly string[];
  /** For a template of text and plain `{{ ns.key }}` outputs only: its parts (see simpleParts). */
  readonly simple?: ReadonlyArray<string | { ns: V2Namespace; key: string }>;
}

const TEXT = "(?:[^{]|\\{(?![{%]))*";
const PLAIN_OUTPUT = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const SIMPLE = new RegExp(`^${TEXT}(?:${PLAIN_OUTPUT.source}${TEXT})*$`);

/**
 * A template of text and `{{ ns.key }}` outputs without filters (`host={{ attributes.hostname }}`,
 * most strings of most modules) split into its parts: rendering it is concatenation, about ten
 * times cheaper than the engine's render, which matters when a module renders for every agent
 * of a fleet. LiquidJS outputs a string value as it is, so a part whose value is a string renders
 * the same either way; anything else goes to the engine.
 */
function simpleParts(source: string, allowed: readonly V2Namespace[]): Compiled["simple"] {
  if (!SIMPLE.test(source)) return undefined;
  const parts: Array<string | { ns: V2Namespace; key: string }> = [];
  let at = 0;
  for (const m of source.matchAll(PLAIN_OUTPUT)) {
    const ns = m[1] as V2Namespace;
    if (!allowed.includes(ns)) return undefined;
    parts.push(source.slice(at, m.index), { ns, key: m[2]! });
    at = m.index + m[0].length;
  }
  parts.push(source.slice(at));
  return parts;
}

/** A simple template's text, or undefined when one of its values is not a string (the engine renders it). */
function renderSimple(parts: NonNullable<Compiled["simple"]>, ctx: TemplateContext): string | undefined {
  let out = "";
  for (const p of parts) {
    if (typeof p === "string") out += p;
    else {
      const space = ctx[p.ns] as Readonly<Record<string, unknown>>;
      const v = Object.hasOwn(space, p.key) ? space[p.key] : undefined;
      if (typeof v !== "string") return undefined;
      out += v;
    }
  }
  return out;
}

/** LiquidJS's message without its position suffix and context lines, and that position. */
export function describeLiquidError(err: unknown): { message: string; line: number; column: number } {
  const first = (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "";
  const message = first.replace(/, line:\d+, col:\d+$/, "");
  const pos = LiquidError.is(err) ? err.token?.getPosition?.() : undefined;
  return { message, line: pos?.[0] ?? 1, column: pos?.[1] ?? 1 };
}

const quote = (segments: ReadonlyArray<unknown>) => segments.map((s) => (typeof s === "string" ? s : "[…]")).join(".");

/** The namespace reads of a parsed template; throws TemplateSyntaxError for one it must not make. */
function analyse(tpl: Template[], allowed: readonly V2Namespace[]): { refs: V2Ref[]; secrets: string[] } {
  const refs: V2Ref[] = [];
  const secrets = new Set<string>();
  const globals = engine.analyzeSync(tpl, { partials: false }).globals;
  for (const [root, uses] of Object.entries(globals)) {
    for (const v of uses) {
      const { row: line, col: column } = v.location;
      const ns = (allowed as readonly string[]).includes(root) ? (root as V2Namespace) : undefined;
      if (!ns) {
        const meant = TYPOS[root];
        const known = allowed.join(", ");
        throw new TemplateSyntaxError(
          meant && allowed.includes(meant)
            ? `unknown namespace '${root}' in {{ ${quote(v.segments)} }}; did you mean '${meant}'?`
            : `unknown variable '${root}' (a template reads ${known}, or a variable it assigns first)`,
          line,
          column,
        );
      }
      const key = typeof v.segments[1] === "string" ? v.segments[1] : undefined;
      if (ns === "secrets") {
        if (key === undefined)
          throw new TemplateSyntaxError(
            'secrets are read by a literal name, {{ secrets.NAME }} or {{ secrets["a.b"] }}: a computed name or the whole secrets map cannot be resolved before rendering',
            line,
            column,
          );
        if (v.segments.length > 2)
          throw new TemplateSyntaxError(
            `{{ ${quote(v.segments)} }} reads a property of secret '${key}'; a secret whose name holds a dot is written {{ secrets["${quote(v.segments.slice(1))}"] }}`,
            line,
            column,
          );
        secrets.add(key);
      }
      if (ns === "agent" && key !== undefined && !(AGENT_KEYS as readonly string[]).includes(key))
        throw new TemplateSyntaxError(`agent has no '${key}' (it holds ${AGENT_KEYS.join(", ")})`, line, column);
      refs.push({ ns, ...(key === undefined ? {} : { key }), line, column });
    }
  }
  return { refs, secrets: [...secrets].sort() };
}

let nextId = 1;
/** Parsed templates by source, shared by every module: a string parses the same wherever it is. */
const parsed = new Map<string, Compiled>();
const PARSED_MAX = 20_000;

/**
 * Parses and analyses one template string (cached by its text). `allowed` narrows the namespaces
 * (a parameter's template reads no secrets and no parameters).
 */
export function compile(source: string, allowed: readonly V2Namespace[] = V2_NAMESPACES): Compiled {
  const cacheKey = allowed === V2_NAMESPACES ? source : `${allowed.join(",")}\u0000${source}`;
  const hit = parsed.get(cacheKey);
  if (hit) return hit;
  let tpl: Template[];
  try {
    tpl = engine.parse(source);
  } catch (err) {
    const d = describeLiquidError(err);
    throw new TemplateSyntaxError(d.message, d.line, d.column);
  }
  const simple = simpleParts(source, allowed);
  const c: Compiled = { source, id: nextId++, tpl, ...analyse(tpl, allowed), ...(simple ? { simple } : {}) };
  if (parsed.size >= PARSED_MAX) parsed.clear();
  parsed.set(cacheKey, c);
  return c;
}

/** What a template is rendered over. `secrets` holds only the names the operation resolved. */
export interface TemplateContext {
  values: Readonly<Record<string, unknown>>;
  parameters: Readonly<Record<string, unknown>>;
  attributes: Readonly<Record<string, string>>;
  tags: Readonly<Record<string, string>>;
  secrets: Readonly<Record<string, string>>;
  agent: { node_id: string; name: string };
}

/**
 * Rendered outputs by the inputs a template read: a fleet whose agents share the values a
 * template reads renders it once, not once per agent. Keyed by what the analysis says the
 * template reads, so two agents with the same key render the same text; a template reading a
 * secret is never kept (its output is a secret). Bounded by characters held: past the budget the
 * whole memo is dropped and refills.
 */
const memo = new Map<string, string>();
const MEMO_BUDGET = 32 * 1024 * 1024;
let memoChars = 0;

const MISSING = "\u0000missing";
/**
 * JSON of an input by identity: the agents of a fan-out share their value sets' lists and maps,
 * which are never modified once merged, so a 50-item list is written out once, not per agent.
 */
const jsonOf = new WeakMap<object, string>();
function json(v: unknown): string {
  if (v === null || typeof v !== "object") return v === undefined ? "null" : JSON.stringify(v);
  let s = jsonOf.get(v);
  if (s === undefined) {
    s = JSON.stringify(v);
    jsonOf.set(v, s);
  }
  return s;
}

function inputKey(c: Compiled, ctx: TemplateContext): string {
  let key = String(c.id);
  for (const r of c.refs) {
    const space = ctx[r.ns] as Readonly<Record<string, unknown>>;
    key += `\u0001${r.key === undefined ? json(space) : Object.hasOwn(space, r.key) ? json(space[r.key]) : MISSING}`;
  }
  return key;
}

/** Renders a compiled template; a LiquidJS error (an unknown variable, a limit) is thrown as it is. */
export function renderCompiled(c: Compiled, ctx: TemplateContext): string {
  if (c.simple) {
    const text = renderSimple(c.simple, ctx);
    if (text !== undefined) return text;
  }
  if (c.secrets.length > 0) return String(engine.renderSync(c.tpl, ctx, RENDER_OPTIONS));
  const key = inputKey(c, ctx);
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  const out = String(engine.renderSync(c.tpl, ctx, RENDER_OPTIONS));
  memoChars += key.length + out.length;
  if (memoChars > MEMO_BUDGET) {
    memo.clear();
    memoChars = key.length + out.length;
  }
  memo.set(key, out);
  return out;
}
