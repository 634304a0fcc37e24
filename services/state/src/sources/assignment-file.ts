import { isMap, isScalar, isSeq, LineCounter, type Node, type Pair, parseDocument } from "yaml";
import type { ErrorReason } from "@orch/contracts";
import { OrchError } from "@orch/kit";
import type { SourceFileErrorRow } from "../db/sources.js";
import { batchSize } from "../engine/fanout.js";
import { checkDescription, checkMaxFailures, checkModuleList, checkSelector } from "../validate.js";
import type { TreeAssignment } from "./tree-types.js";

/**
 * One `assignments/<name>.yaml` file: the fields of CreateAssignment plus how a sync applies it.
 * Every problem is reported (not only the first) so one push can fix them all; the checks are the
 * API's own functions, so a file is refused exactly when the same request would be.
 */

const KEYS = new Set([
  "name",
  "selector",
  "modules",
  "description",
  "enforce",
  "apply_on_sync",
  "batch",
  "max_failures",
  "parameters",
]);
/** What fanout's batchSize is asked to size: only the spec's syntax matters here. */
const BATCH_PROBE_TOTAL = 100;

export interface AssignmentFileResult {
  assignment?: TreeAssignment;
  errors: SourceFileErrorRow[];
}

export function readAssignmentFile(
  file: string,
  name: string,
  content: string,
  resolves: (module: string) => boolean,
): AssignmentFileResult {
  const errors: SourceFileErrorRow[] = [];
  const lines = new LineCounter();
  const pos = (offset: number) => {
    const { line, col } = lines.linePos(offset);
    return { line, column: col };
  };
  const report = (at: { line: number; column: number }, code: ErrorReason, message: string) =>
    errors.push({ file, ...at, code, message });
  const refuseAt = (node: Node | null | undefined, code: ErrorReason, message: string) =>
    report(pos(node?.range?.[0] ?? 0), code, message);

  const doc = parseDocument(content, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    // Same wording as the module upload's invalid_yaml (parseModule).
    const message = e.message.split("\n")[0]!.replace(/ at line \d+, column \d+.*$/, "");
    report(pos(e.pos[0]), "invalid_yaml", `invalid YAML: ${message}`);
    return { errors };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    report({ line: 1, column: 1 }, "invalid_yaml", `invalid YAML: ${(err as Error).message}`);
    return { errors };
  }
  const root = doc.contents;
  if (!isMap(root) || !data || typeof data !== "object" || Array.isArray(data)) {
    refuseAt(root, "invalid_request", "an assignment is a mapping with selector and modules");
    return { errors };
  }

  const pairs = new Map<string, Pair>();
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
    if (key !== undefined && KEYS.has(key)) pairs.set(key, pair);
    else refuseAt(pair.key as Node, "invalid_request", `unknown field '${key ?? "(complex key)"}'`);
  }
  const rec = data as Record<string, unknown>;
  /** null and absent mean the same: YAML's `key:` with nothing after it. */
  const value = (key: string) => rec[key] ?? undefined;
  const nodeOf = (key: string) => (pairs.get(key)?.value ?? pairs.get(key)?.key) as Node | undefined;

  const named = value("name");
  if (named !== undefined && named !== name)
    refuseAt(
      nodeOf("name"),
      "name_mismatch",
      typeof named === "string"
        ? `the assignment's name '${named}' does not match its file name '${name}'`
        : `name must be the file name '${name}'`,
    );

  const selector = readSelector(content, nodeOf("selector"), value("selector"), refuseAt, report, pos);
  const modules = readModules(nodeOf("modules"), value("modules"), resolves, refuseAt);

  const description = value("description");
  if (description !== undefined && typeof description !== "string")
    refuseAt(nodeOf("description"), "invalid_request", "description must be a string");
  else if (typeof description === "string")
    refuseIfThrows(nodeOf("description"), refuseAt, () => checkDescription(description));

  const flag = (key: string): boolean => {
    const v = value(key);
    if (v === undefined) return false;
    if (typeof v !== "boolean") refuseAt(nodeOf(key), "invalid_request", `${key} must be true or false`);
    return v === true;
  };
  const enforce = flag("enforce");
  const applyOnSync = flag("apply_on_sync");

  const batch = readBatch(nodeOf("batch"), value("batch"), refuseAt);

  const maxFailures = value("max_failures");
  refuseIfThrows(nodeOf("max_failures"), refuseAt, () => checkMaxFailures(maxFailures));

  const parameters = readParameters(pairs.get("parameters"), value("parameters"), refuseAt, pos);

  if (errors.length || selector === undefined || modules === undefined || batch === undefined || !parameters)
    return { errors };
  return {
    errors,
    assignment: {
      file,
      name,
      selector,
      modules,
      description: typeof description === "string" ? description : null,
      enforce,
      apply_on_sync: applyOnSync,
      batch,
      max_failures: typeof maxFailures === "number" ? maxFailures : null,
      ...parameters,
    },
  };
}

/**
 * `parameters:`, a map; its values are checked against the modules' declarations once every
 * module of the tree is parsed (tree-parameters.ts), at the lines recorded here.
 */
function readParameters(
  pair: Pair | undefined,
  v: unknown,
  refuseAt: Fail,
  pos: (offset: number) => { line: number; column: number },
): Pick<TreeAssignment, "parameters" | "parameterLines"> | undefined {
  const at = (node: unknown) => pos((node as Node | null | undefined)?.range?.[0] ?? 0);
  if (!pair) return {};
  const lines: Record<string, { line: number; column: number }> = { "": at(pair.key) };
  if (v === undefined) return { parameters: {}, parameterLines: lines };
  if (!v || typeof v !== "object" || Array.isArray(v) || !isMap(pair.value)) {
    refuseAt((pair.value ?? pair.key) as Node, "invalid_request", "parameters must be a map from name to value");
    return undefined;
  }
  for (const item of pair.value.items) if (isScalar(item.key)) lines[String(item.key.value)] = at(item.key);
  return { parameters: v as Record<string, unknown>, parameterLines: lines };
}

type Fail = (node: Node | null | undefined, code: ErrorReason, message: string) => void;

/** Runs one of the API's checks; its refusal is reported at `node`. Returns whether it passed. */
function refuseIfThrows(node: Node | undefined, refuseAt: Fail, check: () => void): boolean {
  try {
    check();
    return true;
  } catch (err) {
    if (!(err instanceof OrchError)) throw err;
    refuseAt(node, err.reason, err.message);
    return false;
  }
}

function readSelector(
  content: string,
  node: Node | undefined,
  v: unknown,
  refuseAt: Fail,
  report: (at: { line: number; column: number }, code: ErrorReason, message: string) => void,
  pos: (offset: number) => { line: number; column: number },
): string | undefined {
  if (v === undefined) {
    refuseAt(node, "invalid_request", "selector is required");
    return undefined;
  }
  if (typeof v !== "string") {
    refuseAt(node, "invalid_selector", "selector must be a string");
    return undefined;
  }
  try {
    checkSelector(v);
  } catch (err) {
    if (!(err instanceof OrchError)) throw err;
    const position = typeof err.details.position === "number" ? err.details.position : 0;
    report(pos(selectorOffset(content, node, v, position)), err.reason, err.message);
    return undefined;
  }
  // The API stores the selector trimmed (checkDefinition).
  return v.trim();
}

/** Points into the selector when its source text maps 1:1 onto the value (plain, or quoted without escapes). */
function selectorOffset(content: string, node: Node | undefined, v: string, position: number): number {
  const start = node?.range?.[0] ?? 0;
  if (!node?.range || !isScalar(node)) return start;
  const raw = content.slice(node.range[0], node.range[1]);
  if (raw === v) return start + position;
  const quoted = (raw.startsWith('"') || raw.startsWith("'")) && raw.length === v.length + 2 && raw.slice(1, -1) === v;
  return quoted ? start + 1 + position : start;
}

function readModules(
  node: Node | undefined,
  v: unknown,
  resolves: (module: string) => boolean,
  refuseAt: Fail,
): string[] | undefined {
  if (v === undefined) {
    refuseAt(node, "invalid_request", "modules is required");
    return undefined;
  }
  if (!Array.isArray(v)) {
    refuseAt(node, "invalid_request", "modules must be a list of module names");
    return undefined;
  }
  const items = isSeq(node) ? node.items : [];
  const itemNode = (i: number) => (items[i] as Node | undefined) ?? node;
  const bad = v.findIndex((m) => typeof m !== "string");
  if (bad >= 0) {
    refuseAt(itemNode(bad), "invalid_request", `modules[${bad}] must be a module name`);
    return undefined;
  }
  const names = v as string[];
  let modules: string[];
  try {
    modules = checkModuleList(names);
  } catch (err) {
    if (!(err instanceof OrchError)) throw err;
    // validName reports `modules.<i>`; the list-wide rules report `modules`.
    const i = /^modules\.(\d+)$/.exec(String(err.details.field ?? ""));
    refuseAt(i ? itemNode(Number(i[1])) : node, err.reason, err.message);
    return undefined;
  }
  let missing = false;
  for (const m of modules) {
    if (resolves(m)) continue;
    missing = true;
    refuseAt(itemNode(names.indexOf(m)), "module_not_found", `no module '${m}' in the tree or the catalog`);
  }
  return missing ? undefined : modules;
}

function readBatch(node: Node | undefined, v: unknown, refuseAt: Fail): string | undefined {
  if (v === undefined) return "";
  if (typeof v !== "number" && typeof v !== "string") {
    refuseAt(node, "invalid_batch", 'batch must be a positive integer or a percentage such as "25%"');
    return undefined;
  }
  const spec = String(v);
  return refuseIfThrows(node, refuseAt, () => batchSize(spec, BATCH_PROBE_TOTAL)) ? spec : undefined;
}
