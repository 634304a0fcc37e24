import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from "yaml";
import type { z } from "zod";
import { isBundleRef, MODULE_MAX_BYTES, type BundleFile, type ReasonFor } from "@orch/contracts";
import { invalid, type OrchError } from "@orch/kit";
import { secretReader, templateProblem } from "./liquid/check.js";
import { parseParameterDecls, type ParameterDecl } from "./parameters.js";
import { refsIn, scanTemplate, TEMPLATE_MARK } from "./template.js";
import { checkTriggers, dependencyEdges, hasTriggers, idList } from "./triggers.js";
import { ARGUMENT_FIELDS, PATH_FIELDS, RESOURCE_TYPES, isResourceType, moduleDoc, resourceBase } from "./types.js";
import type { BlobRef, ModuleResource, ParsedModule, ResourceType, TemplateFileRef } from "./types.js";

export { MODULE_MAX_BYTES };

type Path = ReadonlyArray<string | number>;

/** `resources[1].requires[0]` style, as operators read it. */
export function formatPath(path: Path): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out ? `.${p}` : p;
  return out || "(root)";
}

/** Finds the YAML node at a path; falls back to the deepest existing ancestor. */
function nodeAt(doc: Document, path: Path, keyNode = false): Node | undefined {
  let node: unknown = doc.contents;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) return node as Node;
      const last = i === path.length - 1;
      node = last && keyNode ? pair.key : (pair.value ?? pair.key);
    } else if (isSeq(node) && typeof seg === "number" && node.items[seg]) {
      node = node.items[seg];
    } else {
      return node as Node;
    }
  }
  return node as Node;
}

class ModuleLocator {
  constructor(
    readonly doc: Document,
    readonly lines: LineCounter,
  ) {}
  at(path: Path, keyNode = false): { line: number; column: number } {
    const node = nodeAt(this.doc, path, keyNode);
    const offset = node?.range?.[0] ?? 0;
    const { line, col } = this.lines.linePos(offset);
    return { line, column: col };
  }
  /** An OrchError naming the YAML path and line. */
  error(reason: ReasonFor<"INVALID_ARGUMENT">, path: Path, message: string, keyNode = false): OrchError {
    const { line, column } = this.at(path, keyNode);
    const where = formatPath(path);
    return invalid(reason, `${where} (line ${line}): ${message}`, { field: "content", path: where, line, column });
  }
}

function firstIssue(
  loc: ModuleLocator,
  prefix: Path,
  err: z.ZodError,
  reason: ReasonFor<"INVALID_ARGUMENT"> = "invalid_module",
): OrchError {
  const issue = err.issues[0]!;
  const path = [...prefix, ...(issue.path as Array<string | number>)];
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0]!;
    return loc.error(reason, [...path, key], `unknown field '${key}'`, true);
  }
  const missing = issue.code === "invalid_type" && /received undefined/.test(issue.message);
  return loc.error(
    reason,
    path,
    missing ? "is required" : issue.code === "invalid_union" ? unionMessage(issue.errors) : issue.message,
  );
}

/** A union's own message is "Invalid input": say what the closest alternative wanted instead. */
function unionMessage(branches: ReadonlyArray<ReadonlyArray<{ code: string; message: string }>>): string {
  for (const b of branches) for (const i of b) if (i.code !== "invalid_type") return i.message;
  return branches[0]?.[0]?.message ?? "invalid value";
}

/** Reports the first cycle in `requires` (and onchanges/notify/watch: triggers.ts), as a path of ids. */
function findCycle(resources: ModuleResource[], edges: ReadonlyMap<string, string[]>): string[] | undefined {
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (id: string): string[] | undefined => {
    state.set(id, 1);
    stack.push(id);
    for (const dep of edges.get(id) ?? []) {
      if (state.get(dep) === 1) return [...stack.slice(stack.indexOf(dep)), dep];
      if (!state.has(dep)) {
        const c = visit(dep);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(id, 2);
    return undefined;
  };
  for (const r of resources) {
    if (state.has(r.id)) continue;
    const c = visit(r.id);
    if (c) return c;
  }
  return undefined;
}

function checkTemplates(loc: ModuleLocator, path: Path, v: unknown): void {
  if (typeof v === "string") {
    const { typo } = scanTemplate(v);
    if (typo)
      throw loc.error(
        "invalid_template",
        path,
        `unknown template namespace in {{ ${typo.found} }}; did you mean {{ ${typo.meant}.… }}?`,
      );
    return;
  }
  if (Array.isArray(v)) for (const [i, x] of v.entries()) checkTemplates(loc, [...path, i], x);
  else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) checkTemplates(loc, [...path, k], x);
}

/**
 * Version 2: every string is a template of the engine (liquid/check.ts), refused at its field's
 * line; in a literal block (`content: |`), whose lines are the file's, also at the file's line.
 */
function checkTemplatesV2(loc: ModuleLocator, at: Path, type: ResourceType, spec: Record<string, unknown>): void {
  const problem = templateProblem(type, spec);
  if (!problem) return;
  const path = [...at, ...problem.path];
  const node = nodeAt(loc.doc, path);
  const block = problem.line !== undefined && isScalar(node) && node.type === "BLOCK_LITERAL";
  const where = block ? ` (line ${loc.at(path).line + problem.line!} of the module)` : "";
  throw loc.error("invalid_template", path, `${problem.message}${where}`);
}

/** For a field of a spec, the first secret it reads: `{{ secrets.x }}` in version 1, any read of one in version 2. */
type SecretIn = (field: string) => string | undefined;
const secretInV1 =
  (spec: Record<string, unknown>): SecretIn =>
  (field) =>
    refsIn(spec[field]).find((r) => r.ns === "secrets")?.key;

/** Refuses a secret rendered into a field that becomes a process argument (see ARGUMENT_FIELDS). */
function checkSecretArguments(loc: ModuleLocator, at: Path, type: ResourceType, secretIn: SecretIn): void {
  for (const field of ARGUMENT_FIELDS[type]) {
    const secret = secretIn(field);
    if (secret === undefined) continue;
    const expr = `{{ secrets.${secret} }}`;
    const via =
      type === "exec"
        ? `pass it through env (env: { SECRET: "${expr}" }) and use $SECRET, or write it with a file resource`
        : "write it with a file resource instead";
    const why = "which becomes a process argument any local user can read in /proc";
    throw loc.error(
      "secret_in_argument",
      [...at, field],
      `${expr} must not be rendered into '${field}', ${why}; ${via}`,
    );
  }
}

/** Refuses a secret rendered into a field that becomes a file name (see PATH_FIELDS). */
function checkSecretPaths(loc: ModuleLocator, at: Path, type: ResourceType, secretIn: SecretIn): void {
  for (const field of PATH_FIELDS[type]) {
    const secret = secretIn(field);
    if (secret === undefined) continue;
    throw loc.error(
      "secret_in_path",
      [...at, field],
      `{{ secrets.${secret} }} must not be rendered into '${field}', which becomes a file name any local user can list; put the secret in the file's content`,
    );
  }
}

/** A module's `parameters:` (version 2 only), each problem at its line. */
function declaredParameters(
  loc: ModuleLocator,
  top: { version?: number | undefined; parameters?: unknown },
): Record<string, ParameterDecl> {
  if (top.parameters !== undefined && top.version !== 2)
    throw loc.error("invalid_module", ["parameters"], "parameters need version: 2", true);
  return parseParameterDecls(top.parameters, (path, message, keyNode) =>
    loc.error("invalid_module", path, message, keyNode),
  );
}

/**
 * Parses and validates a module (schema v1). Every refusal is INVALID_ARGUMENT with a stable
 * reason and details `{field: "content", path, line, column}`.
 */
export function parseModule(
  content: string,
  expectedName?: string,
  files?: readonly BundleFile[] | null,
): ParsedModule {
  if (Buffer.byteLength(content, "utf8") > MODULE_MAX_BYTES) {
    throw invalid("module_too_large", `module content exceeds ${MODULE_MAX_BYTES} bytes (256 KiB)`, {
      field: "content",
      limit: MODULE_MAX_BYTES,
    });
  }
  const lines = new LineCounter();
  const doc = parseDocument(content, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    const { line, col } = lines.linePos(e.pos[0]);
    const message = e.message.split("\n")[0]!.replace(/ at line \d+, column \d+.*$/, "");
    throw invalid("invalid_yaml", `invalid YAML at line ${line}, column ${col}: ${message}`, {
      field: "content",
      line,
      column: col,
    });
  }
  const loc = new ModuleLocator(doc, lines);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw invalid("invalid_yaml", `invalid YAML: ${(err as Error).message}`, { field: "content", line: 1, column: 1 });
  }
  if (!data || typeof data !== "object" || Array.isArray(data))
    throw loc.error("invalid_module", [], "a module is a mapping with name and resources");

  const top = moduleDoc.safeParse(data);
  if (!top.success) throw firstIssue(loc, [], top.error);
  if (expectedName !== undefined && top.data.name !== expectedName) {
    throw loc.error("name_mismatch", ["name"], `the module's name '${top.data.name}' does not match '${expectedName}'`);
  }
  const parameters = declaredParameters(loc, top.data);

  const resources: ModuleResource[] = [];
  const blobs: BlobRef[] = [];
  const templateFiles: TemplateFileRef[] = [];
  const bundle = new Map((files ?? []).map((f) => [f.path, f]));
  const seen = new Map<string, number>();
  top.data.resources.forEach((raw, i) => {
    const at: Path = ["resources", i];
    if (!raw || typeof raw !== "object" || Array.isArray(raw))
      throw loc.error("invalid_module", at, "a resource is a mapping with id and type");
    const base = resourceBase.safeParse(raw);
    if (!base.success) throw firstIssue(loc, at, base.error);
    const { id, type, requires, onchanges, notify, watch, description: _d, ...spec } = base.data;
    if (!isResourceType(type)) {
      throw loc.error(
        "unknown_resource_type",
        [...at, "type"],
        `unknown resource type '${type}' (known: ${Object.keys(RESOURCE_TYPES).join(", ")})`,
      );
    }
    const typed = RESOURCE_TYPES[type].safeParse(spec);
    if (!typed.success) throw firstIssue(loc, at, typed.error);
    readSource(loc, { at, i, type, spec, version: top.data.version, bundle, files }, blobs, templateFiles);
    if (seen.has(id))
      throw loc.error(
        "duplicate_resource_id",
        [...at, "id"],
        `resource id '${id}' is already used by resources[${seen.get(id)}]`,
      );
    seen.set(id, i);
    const v2 = top.data.version === 2;
    if (v2) checkTemplatesV2(loc, at, type, spec);
    else checkTemplates(loc, at, spec);
    const secretIn = v2 ? secretReader(spec) : secretInV1(spec);
    checkSecretArguments(loc, at, type, secretIn);
    checkSecretPaths(loc, at, type, secretIn);
    resources.push({
      id,
      type,
      requires: requires === undefined ? [] : typeof requires === "string" ? [requires] : [...new Set(requires)],
      spec,
      onchanges: idList(onchanges),
      notify: idList(notify),
      watch: idList(watch),
    });
  });

  checkRequires(loc, resources, top.data.resources, seen);
  checkTriggers(top.data.version, resources, top.data.resources, (reason, path, message, keyNode) =>
    loc.error(reason, path, message, keyNode),
  );
  const cycle = findCycle(resources, dependencyEdges(resources));
  if (cycle) {
    throw loc.error(
      "cyclic_requires",
      ["resources", seen.get(cycle[0]!)!, "requires"],
      `${resources.some(hasTriggers) ? "requires, onchanges, notify and watch" : "requires"} form a cycle: ${cycle.join(" → ")}`,
    );
  }
  return {
    name: top.data.name,
    description: top.data.description ?? "",
    version: top.data.version ?? 1,
    parameters,
    resources,
    blobs,
    templateFiles,
    bundle,
  };
}

/**
 * A `file` or `archive` resource's `source:`: a bundle path becomes its file's digest; a literal
 * blob is listed for shipping (and for unknown_blob); a `template: true` source is listed to be read
 * and rendered instead; a templated source (version 2) is resolved per agent once rendered.
 */
function readSource(
  loc: ModuleLocator,
  r: {
    at: Path;
    i: number;
    type: ResourceType;
    spec: Record<string, unknown>;
    version: number | undefined;
    bundle: ReadonlyMap<string, BundleFile>;
    files: readonly BundleFile[] | null | undefined;
  },
  blobs: BlobRef[],
  templateFiles: TemplateFileRef[],
): void {
  const { at, i, spec } = r;
  if (typeof spec.source !== "string") return;
  const written = spec.source;
  const where = loc.at([...at, "source"]);
  if (written.includes(TEMPLATE_MARK)) {
    if (r.version !== 2) throw loc.error("invalid_module", [...at, "source"], "a templated source needs version: 2");
    if (spec.template === true)
      throw loc.error(
        "invalid_module",
        [...at, "source"],
        "template: true needs a literal source (files/… or a digest)",
      );
    return;
  }
  if (isBundleRef(written)) {
    const file = r.bundle.get(written);
    if (!file) throw loc.error("unknown_bundle_file", [...at, "source"], missingFile(written, r.files));
    spec.source = file.digest;
  }
  const ref = { digest: String(spec.source), path: `resources[${i}].source`, ...where };
  if (spec.template !== true) {
    if (r.type === "file" || r.type === "archive") blobs.push(ref);
    return;
  }
  if (r.version !== 2) throw loc.error("invalid_module", [...at, "template"], "template: true needs version: 2");
  templateFiles.push({ ...ref, resource: i, source: written });
}

/** Each `requires` names a resource of this module (at the requirement's line). */
function checkRequires(
  loc: ModuleLocator,
  resources: readonly ModuleResource[],
  raws: readonly unknown[],
  seen: ReadonlyMap<string, number>,
): void {
  resources.forEach((r, i) => {
    const raw = base(raws[i]);
    r.requires.forEach((dep) => {
      if (!seen.has(dep)) {
        const j = Array.isArray(raw.requires) ? raw.requires.indexOf(dep) : -1;
        throw loc.error(
          "unknown_requirement",
          ["resources", i, "requires", ...(j >= 0 ? [j] : [])],
          `requires '${dep}', which is not a resource of this module`,
        );
      }
    });
  });
}

/** Why a `source: files/…` resolves to nothing: no bundle at all, or the bundle's nearest names. */
function missingFile(source: string, files: readonly BundleFile[] | null | undefined): string {
  if (!files?.length)
    return `${source} names a bundle file, but this module has no files: upload it as a bundle (a directory with module.yaml and files/, as tar.gz or zip: orchctl modules push <dir>)`;
  const near = files
    .map((f) => f.path)
    .filter((p) => p.split("/").pop() === source.split("/").pop())
    .slice(0, 3);
  const hint = near.length ? ` (did you mean ${near.join(", ")}?)` : "";
  return `the bundle has no file ${source}${hint}; it has ${files.length} file${files.length === 1 ? "" : "s"} under files/`;
}

const base = (raw: unknown) => raw as { requires?: unknown };
