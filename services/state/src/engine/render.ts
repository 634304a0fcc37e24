import type { JsonObject } from "@bufbuild/protobuf";
import { CONTENT_PATH_FIELDS, SECRET_PATH_FIELDS, sealKey, type StateResource } from "@orch/contracts";
import {
  refsIn,
  renderValue,
  TEMPLATE_MARK,
  TemplateError,
  type RenderInputs,
  type TemplateRef,
} from "../module/template.js";
import type { ParsedModule } from "../module/types.js";

/** A module as an operation uses it: the exact version, and for drift the inputs it was applied with. */
export interface ModuleSource {
  name: string;
  sha256: string;
  parsed: ParsedModule;
  /** Attributes and tags recorded by the apply (drift); absent = the agent's current ones. */
  inputs?: { attributes: Record<string, string>; tags: Record<string, string> };
}

export type RenderedResource = Omit<StateResource, "$typeName" | "$unknown">;

/** Secret names any resource of these modules reads. */
export function secretNames(sources: readonly ModuleSource[]): string[] {
  const names = new Set<string>();
  for (const s of sources)
    for (const r of s.parsed.resources) for (const ref of refsIn(r.spec)) if (ref.ns === "secrets") names.add(ref.key);
  return [...names].sort();
}

/** Keys `<module>/<id>` of resources rendered with a secret: their hashes (a guessing oracle) are withheld. */
export function secretBearing(sources: readonly ModuleSource[]): Set<string> {
  const out = new Set<string>();
  for (const s of sources) {
    for (const r of s.parsed.resources) {
      if (refsIn(r.spec).some((ref) => ref.ns === "secrets")) out.add(`${s.name}/${r.id}`);
    }
  }
  return out;
}

const NO_SECRETS: ReadonlyMap<string, string> = new Map();

/**
 * The files that resources of these modules rendered with a secret leave holding it (their
 * SECRET_PATH_FIELDS), rendered with each module's recorded inputs. A path holds no secret
 * (secret_in_path), so none is resolved; one that cannot be rendered is left out.
 */
export function secretPaths(
  sources: readonly ModuleSource[],
  agent: { attributes: Record<string, string>; tags: Record<string, string> },
): Set<string> {
  const out = new Set<string>();
  for (const s of sources) {
    const inputs: RenderInputs = {
      attributes: s.inputs?.attributes ?? agent.attributes,
      tags: s.inputs?.tags ?? agent.tags,
      secrets: NO_SECRETS,
    };
    for (const r of s.parsed.resources) {
      const field = SECRET_PATH_FIELDS[r.type];
      const raw = field === undefined ? undefined : r.spec[field];
      if (typeof raw !== "string" || !refsIn(r.spec).some((ref) => ref.ns === "secrets")) continue;
      try {
        const path = renderValue(raw, inputs, `${s.name}/${r.id}`);
        if (typeof path === "string" && path.startsWith("/")) out.add(sealKey(path));
      } catch (err) {
        if (!(err instanceof TemplateError)) throw err;
      }
    }
  }
  return out;
}

/** Keys `<module>/<id>` of rendered content resources (file, line, block) whose file is one of `paths`. */
export function onPaths(resources: readonly RenderedResource[], paths: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  if (paths.size === 0) return out;
  for (const r of resources) {
    const field = CONTENT_PATH_FIELDS[r.type];
    const path = field === undefined ? undefined : r.spec?.[field];
    if (typeof path === "string" && paths.has(sealKey(path))) out.add(`${r.module}/${r.id}`);
  }
  return out;
}

/**
 * Every template reference of a module's resources, scanned once per parsed module: each apply of
 * a fan-out records its snapshot inputs from the same module, and scanning every string of every
 * resource per operation cost more than the rest of its snapshot.
 */
const moduleRefs = new WeakMap<ParsedModule, TemplateRef[]>();
function refsOfModule(parsed: ParsedModule): TemplateRef[] {
  let refs = moduleRefs.get(parsed);
  if (!refs) {
    refs = parsed.resources.flatMap((r) => refsIn(r.spec));
    moduleRefs.set(parsed, refs);
  }
  return refs;
}

/** The attributes and tags a module actually reads: what a snapshot must keep to re-render it. */
export function usedInputs(source: ModuleSource, attributes: Record<string, string>, tags: Record<string, string>) {
  const a: Record<string, string> = {};
  const t: Record<string, string> = {};
  for (const ref of refsOfModule(source.parsed)) {
    if (ref.ns === "attributes" && Object.hasOwn(attributes, ref.key)) a[ref.key] = attributes[ref.key]!;
    if (ref.ns === "tags" && Object.hasOwn(tags, ref.key)) t[ref.key] = tags[ref.key]!;
  }
  return { attributes: a, tags: t };
}

/**
 * Whether a resource's spec holds any template, worked out once per parsed spec: one without is
 * the same for every agent, so it is passed on as it is instead of being copied per operation
 * (nothing downstream modifies a rendered spec).
 */
const hasTemplate = new WeakMap<object, boolean>();
function templated(spec: object): boolean {
  let t = hasTemplate.get(spec);
  if (t === undefined) {
    // Any "{{" at all counts: renderValue leaves a string without one as it is.
    t = JSON.stringify(spec).includes(TEMPLATE_MARK);
    hasTemplate.set(spec, t);
  }
  return t;
}

/**
 * Renders every resource for one agent. Throws TemplateError for a missing attribute or tag.
 * The result carries secret values: it goes to the agent and is never stored or logged.
 */
export function renderResources(
  sources: readonly ModuleSource[],
  agent: { attributes: Record<string, string>; tags: Record<string, string> },
  secrets: ReadonlyMap<string, string>,
): RenderedResource[] {
  const out: RenderedResource[] = [];
  for (const s of sources) {
    const inputs: RenderInputs = {
      attributes: s.inputs?.attributes ?? agent.attributes,
      tags: s.inputs?.tags ?? agent.tags,
      secrets,
    };
    for (const r of s.parsed.resources) {
      out.push({
        id: r.id,
        module: s.name,
        type: r.type,
        spec: (templated(r.spec) ? renderValue(r.spec, inputs, `${s.name}/${r.id}`) : r.spec) as JsonObject,
        requires: r.requires.map((dep) => `${s.name}/${dep}`),
      });
    }
  }
  return out;
}

/** Keys `<module>/<id>` of exec resources without a guard: they run on every apply and hold no state. */
export function statelessResources(sources: readonly ModuleSource[]): Set<string> {
  const out = new Set<string>();
  for (const s of sources) {
    for (const r of s.parsed.resources) {
      if (
        r.type === "exec" &&
        r.spec.creates === undefined &&
        r.spec.onlyif === undefined &&
        r.spec.unless === undefined
      )
        out.add(`${s.name}/${r.id}`);
    }
  }
  return out;
}
