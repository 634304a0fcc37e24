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
import { triggerKeys } from "../module/triggers.js";
import type { ModuleResource, ParsedModule } from "../module/types.js";
import { contextOf, isV2, renderResourceV2, resourceSecrets, usedInputsV2 } from "./render-v2.js";

export type { ModuleSource, RenderAgent } from "./render-types.js";
import type { ModuleSource, RenderAgent } from "./render-types.js";

/** onchanges and triggered_by are left out of a resource without them (as a StateResource init allows). */
export type RenderedResource = Omit<StateResource, "$typeName" | "$unknown" | "onchanges" | "triggeredBy"> &
  Partial<Pick<StateResource, "onchanges" | "triggeredBy">>;

/** Secret names any resource of these modules reads. */
export function secretNames(sources: readonly ModuleSource[]): string[] {
  const names = new Set<string>();
  for (const s of sources) for (const r of s.parsed.resources) for (const name of secretsOf(s, r)) names.add(name);
  return [...names].sort();
}

/** Secret names one resource reads: `{{ secrets.x }}` (version 1), or any read the analysis finds (version 2). */
function secretsOf(s: ModuleSource, r: ModuleResource): string[] {
  if (isV2(s)) return resourceSecrets(r);
  return refsIn(r.spec).flatMap((ref) => (ref.ns === "secrets" ? [ref.key] : []));
}

/** Keys `<module>/<id>` of resources rendered with a secret: their hashes (a guessing oracle) are withheld. */
export function secretBearing(sources: readonly ModuleSource[]): Set<string> {
  const out = new Set<string>();
  for (const s of sources) {
    for (const r of s.parsed.resources) {
      if (secretsOf(s, r).length > 0) out.add(`${s.name}/${r.id}`);
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
export function secretPaths(sources: readonly ModuleSource[], agent: RenderAgent): Set<string> {
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
      if (typeof raw !== "string" || secretsOf(s, r).length === 0) continue;
      try {
        const path = isV2(s)
          ? renderResourceV2(s, { ...r, spec: { [field!]: raw } }, contextOf(s, agent, {}))[field!]
          : renderValue(raw, inputs, `${s.name}/${r.id}`);
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

/**
 * The attributes and tags a module actually reads: what a snapshot must keep to re-render it. A
 * version-2 module also keeps the values it reads and its resolved parameters (render-v2.ts),
 * from `agent`.
 */
export function usedInputs(
  source: ModuleSource,
  attributes: Record<string, string>,
  tags: Record<string, string>,
  agent?: RenderAgent,
): {
  attributes: Record<string, string>;
  tags: Record<string, string>;
  values?: Record<string, unknown>;
  parameters?: Record<string, unknown>;
} {
  if (isV2(source)) return usedInputsV2(source, { ...agent, attributes, tags });
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
  agent: RenderAgent,
  secrets: ReadonlyMap<string, string>,
): RenderedResource[] {
  const out: RenderedResource[] = [];
  let secretObject: Record<string, string> | undefined;
  for (const s of sources) {
    const inputs: RenderInputs = {
      attributes: s.inputs?.attributes ?? agent.attributes,
      tags: s.inputs?.tags ?? agent.tags,
      secrets,
    };
    // Version 2: one context per module and agent, its parameters resolved once.
    const ctx = isV2(s) ? contextOf(s, agent, (secretObject ??= Object.fromEntries(secrets))) : undefined;
    // A template source still unread would reach the agent as its raw text (module/template-files.ts).
    if (s.parsed.templateFiles.length)
      throw new Error(`module ${s.name}: template files were not read before rendering`);
    for (const r of s.parsed.resources) {
      out.push({
        id: r.id,
        module: s.name,
        type: r.type,
        spec: (ctx
          ? renderResourceV2(s, r, ctx)
          : templated(r.spec)
            ? renderValue(r.spec, inputs, `${s.name}/${r.id}`)
            : r.spec) as JsonObject,
        requires: r.requires.map((dep) => `${s.name}/${dep}`),
        // onchanges and triggered_by (version 2: module/triggers.ts expands notify and watch).
        ...triggerKeys(s.parsed, s.name, r.id),
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
