// Offline schema validation of rendered Kubernetes objects, three layers:
//
// 1. Built-in kinds: the OpenAPI schemas of Kubernetes compiled into validators by the npm
//    package `kubernetes-models` (`new Deployment(obj).validate()`): types, formats, enums,
//    required fields.
// 2. Unknown fields (what `kubectl apply --validate=strict` rejects, and what (1) lets through):
//    the TypeScript declarations of the same package, checked by the TypeScript compiler against
//    each object written as an object literal (excess property checks).
// 3. Custom resources (CloudNativePG Cluster; Prometheus Operator ServiceMonitor, PodMonitor,
//    PrometheusRule): hand-written JSON schemas in deploy/schemas/, checked with ajv.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import ts from "typescript";
import type { K8sObject } from "./kustomize.js";
import { REPO_ROOT } from "./kustomize.js";

export interface SchemaProblem {
  object: string;
  message: string;
}

export const describe = (o: Pick<K8sObject, "kind" | "metadata">) => `${o.kind}/${o.metadata?.name ?? "?"}`;

/** `apps/v1` → `apps/v1`, `v1` → `v1`: the folder of kubernetes-models for an apiVersion. */
const modelPath = (o: K8sObject) => `kubernetes-models/${o.apiVersion}/${o.kind}`;

const CUSTOM_GROUPS = new Set(["postgresql.cnpg.io", "monitoring.coreos.com"]);
const isCustom = (o: K8sObject) => CUSTOM_GROUPS.has(o.apiVersion.split("/")[0]!);

/** Layer 1: kubernetes-models validators (built-in kinds only). */
export async function validateBuiltin(objects: K8sObject[]): Promise<SchemaProblem[]> {
  const problems: SchemaProblem[] = [];
  for (const o of objects.filter((x) => !isCustom(x))) {
    let Model: new (data: unknown) => { validate(): void };
    try {
      const mod = (await import(modelPath(o))) as Record<string, unknown>;
      Model = mod[o.kind] as typeof Model;
      if (typeof Model !== "function") throw new Error("no model class");
    } catch {
      problems.push({ object: describe(o), message: `no Kubernetes schema for ${o.apiVersion} ${o.kind}` });
      continue;
    }
    try {
      new Model(o).validate();
    } catch (err) {
      problems.push({ object: describe(o), message: (err as Error).message });
    }
  }
  return problems;
}

/** Layer 2: unknown (misspelt, misplaced) fields, through the TypeScript compiler. */
export function validateStrictFields(objects: K8sObject[]): SchemaProblem[] {
  const builtin = objects.filter((o) => !isCustom(o));
  const virtualFile = join(REPO_ROOT, "test", "deploy", "__strict_fields__.ts").replace(/\\/g, "/");
  const lines: string[] = [];
  builtin.forEach((o, i) => {
    lines.push(`import type { I${o.kind} as T${i} } from ${JSON.stringify(modelPath(o))};`);
  });
  builtin.forEach((o, i) => {
    lines.push(`export const o${i}: T${i} = ${JSON.stringify(o, null, 1)};`);
  });
  // Where each chunk starts in the joined text, to map a diagnostic back to its object.
  const text = lines.join("\n");
  const starts: number[] = [];
  let line = 0;
  for (const chunk of lines) {
    starts.push(line);
    line += chunk.split("\n").length;
  }
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options, true);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, onError, create) =>
    name === virtualFile ? ts.createSourceFile(name, text, lang, true) : getSourceFile(name, lang, onError, create);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === virtualFile || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (name === virtualFile ? text : readFile(name));
  const program = ts.createProgram([virtualFile], options, host);
  const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === virtualFile || !d.file);
  return diagnostics.map((d) => {
    let object = "(compiler)";
    if (d.file && d.start !== undefined) {
      const { line: l } = d.file.getLineAndCharacterOfPosition(d.start);
      // The import lines come first; object i starts at starts[builtin.length + i].
      for (let i = builtin.length - 1; i >= 0; i--) {
        if (l >= starts[builtin.length + i]!) {
          object = describe(builtin[i]!);
          break;
        }
      }
      if (l < (starts[builtin.length] ?? 0)) object = "(imports)";
    }
    return { object, message: ts.flattenDiagnosticMessageText(d.messageText, "\n") };
  });
}

/** Layer 3: custom resources against deploy/schemas/<group>_<version>_<Kind>.schema.json. */
export function validateCustom(objects: K8sObject[]): SchemaProblem[] {
  const dir = join(REPO_ROOT, "deploy", "schemas");
  const ajv = new Ajv({ allErrors: true, strict: true });
  const schemas = new Map<string, ReturnType<Ajv["compile"]>>();
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".schema.json"))) {
    const [group, version, kind] = f.replace(/\.schema\.json$/, "").split("_");
    schemas.set(`${group}/${version}/${kind}`, ajv.compile(JSON.parse(readFileSync(join(dir, f), "utf8"))));
  }
  const problems: SchemaProblem[] = [];
  for (const o of objects.filter(isCustom)) {
    const validate = schemas.get(`${o.apiVersion}/${o.kind}`);
    if (!validate) {
      problems.push({ object: describe(o), message: `no schema in deploy/schemas for ${o.apiVersion} ${o.kind}` });
      continue;
    }
    if (!validate(o)) {
      for (const e of validate.errors ?? []) {
        const extra =
          e.keyword === "additionalProperties"
            ? ` (${(e.params as { additionalProperty: string }).additionalProperty})`
            : "";
        problems.push({ object: describe(o), message: `${e.instancePath || "/"} ${e.message}${extra}` });
      }
    }
  }
  return problems;
}

export async function validateAll(objects: K8sObject[]): Promise<SchemaProblem[]> {
  return [...(await validateBuiltin(objects)), ...validateStrictFields(objects), ...validateCustom(objects)];
}
