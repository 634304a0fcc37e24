import {
  checkValueKey,
  SECRET_IN_VALUE_RE,
  VALUE_MAX_DEPTH,
  VALUE_SET_MAX_BYTES,
  type ReasonFor,
} from "@orch/contracts";
import { invalid, type OrchError } from "@orch/kit";
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, stringify, type Document, type Node } from "yaml";

/** A map of values as modules read them (`values.a.b`): typed YAML, JSON-compatible. */
export type ValueMap = Record<string, unknown>;

/** A set's values with, per dotted leaf key path, the line of its key in the YAML text. */
export interface ParsedValues {
  values: ValueMap;
  lines: Record<string, number>;
  /** The YAML text the lines refer to. */
  content: string;
}

export const isValueMap = (v: unknown): v is ValueMap => typeof v === "object" && v !== null && !Array.isArray(v);

type Reason = ReasonFor<"INVALID_ARGUMENT">;

export class Locator {
  constructor(private readonly lines: LineCounter) {}
  line(node: Node | null | undefined): number {
    return this.lines.linePos(node?.range?.[0] ?? 0).line;
  }
  error(reason: Reason, node: Node | null | undefined, path: string, message: string): OrchError {
    const line = this.line(node);
    const where = path ? `${path} (line ${line})` : `line ${line}`;
    return invalid(reason, `${where}: ${message}`, { field: "content", line, ...(path ? { path } : {}) });
  }
}

/** Refuses `{{ secrets.… }}` in any string under a value node (lists and maps inside lists too). */
function refuseSecrets(loc: Locator, node: unknown, path: string, depth: number): void {
  if (depth > VALUE_MAX_DEPTH)
    throw loc.error("invalid_values", node as Node, path, `nested deeper than ${VALUE_MAX_DEPTH} levels`);
  if (isScalar(node)) {
    if (typeof node.value === "string" && SECRET_IN_VALUE_RE.test(node.value))
      throw loc.error(
        "secret_in_values",
        node,
        path,
        "holds {{ secrets.… }}: secrets stay in the secret store; read them in the module as {{ secrets.x }}",
      );
  } else if (isSeq(node)) {
    for (const item of node.items) refuseSecrets(loc, item, path, depth + 1);
  } else if (isMap(node)) {
    for (const pair of node.items) if (isPair(pair)) refuseSecrets(loc, pair.value, path, depth + 1);
  }
}

/** Walks a map node: checks every key and records the line of every leaf key path. */
function walk(loc: Locator, node: Node, prefix: string, depth: number, lines: Record<string, number>): void {
  if (!isMap(node)) throw loc.error("invalid_values", node, prefix, "must be a map of keys to values");
  if (depth > VALUE_MAX_DEPTH)
    throw loc.error("invalid_values", node, prefix, `nested deeper than ${VALUE_MAX_DEPTH} levels`);
  for (const pair of node.items) {
    const keyNode = pair.key as Node | null;
    const key = isScalar(keyNode) ? keyNode.value : undefined;
    if (typeof key !== "string") throw loc.error("invalid_values", keyNode, prefix, "every key must be a plain string");
    const path = prefix ? `${prefix}.${key}` : key;
    const bad = checkValueKey(key);
    if (bad) throw loc.error("invalid_values", keyNode, path, `key ${bad.message}`);
    const value = pair.value as Node | null;
    if (isMap(value) && value.items.length > 0) {
      walk(loc, value, path, depth + 1, lines);
      continue;
    }
    refuseSecrets(loc, value, path, depth + 1);
    lines[path] = loc.line(keyNode);
  }
}

/** The last check on the resolved values: aliases may bring in what the node walk did not see. */
function refuseSecretsIn(value: unknown, path: string, line: number): void {
  if (typeof value === "string" && SECRET_IN_VALUE_RE.test(value))
    throw invalid(
      "secret_in_values",
      `${path} (line ${line}): holds {{ secrets.… }}: secrets stay in the secret store`,
      {
        field: "content",
        line,
        path,
      },
    );
  if (Array.isArray(value)) for (const v of value) refuseSecretsIn(v, path, line);
  else if (isValueMap(value)) for (const v of Object.values(value)) refuseSecretsIn(v, path, line);
}

/** Parses YAML text; the document and its line counter, or 400 invalid_values with the line. */
export function parseYaml(content: string): { doc: Document; loc: Locator } {
  if (Buffer.byteLength(content) > VALUE_SET_MAX_BYTES)
    throw invalid("values_too_large", `values are larger than ${VALUE_SET_MAX_BYTES / 1024} KiB`, {
      field: "content",
    });
  const counter = new LineCounter();
  const doc = parseDocument(content, { lineCounter: counter, uniqueKeys: true, prettyErrors: false, merge: false });
  const loc = new Locator(counter);
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    const { line } = counter.linePos(e.pos[0]);
    const message = e.message.split("\n")[0]!.replace(/ at line \d+, column \d+.*$/, "");
    throw invalid("invalid_values", `invalid YAML at line ${line}: ${message}`, { field: "content", line });
  }
  return { doc, loc };
}

/** Resolves a YAML node to plain values (aliases expanded, bounded against alias bombs). */
function toValues(doc: Document, node: Node | null | undefined): unknown {
  try {
    return node ? node.toJS(doc, { maxAliasCount: 100 }) : undefined;
  } catch (err) {
    throw invalid("invalid_values", `invalid YAML: ${(err as Error).message}`, { field: "content", line: 1 });
  }
}

/** Reads the values map at `node` of a parsed document: values, leaf lines, every rule checked. */
export function valuesAt(doc: Document, loc: Locator, node: Node | null | undefined, content: string): ParsedValues {
  const lines: Record<string, number> = {};
  if (node === null || node === undefined || (isScalar(node) && node.value === null))
    return { values: {}, lines, content };
  walk(loc, node, "", 1, lines);
  const values = toValues(doc, node) as ValueMap;
  for (const [path, line] of Object.entries(lines)) refuseSecretsIn(leafAt(values, path), path, line);
  return { values, lines, content };
}

/** YAML text whose whole document is the values map (an upload of a set's values). */
export function parseValuesText(content: string): ParsedValues {
  const { doc, loc } = parseYaml(content);
  return valuesAt(doc, loc, doc.contents as Node | null, content);
}

/**
 * Values given as JSON: stored as the YAML text they print as, so every set has a text whose lines
 * origins can name (and `orchctl values show` prints).
 */
export function parseValuesObject(values: unknown): ParsedValues {
  if (!isValueMap(values))
    throw invalid("invalid_values", "values must be a map of keys to values", { field: "values" });
  const content = Object.keys(values).length ? stringify(values, { aliasDuplicateObjects: false }) : "";
  return parseValuesText(content);
}

/** The value at a dotted path, or undefined. */
export function leafAt(values: ValueMap, path: string): unknown {
  let cur: unknown = values;
  for (const k of path.split(".")) {
    if (!isValueMap(cur) || !Object.hasOwn(cur, k)) return undefined;
    cur = cur[k];
  }
  return cur;
}
