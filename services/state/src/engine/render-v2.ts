import { BLOB_DIGEST, BLOB_SOURCE_TYPES, isBundleRef } from "@orch/contracts";
import type { TemplateContext } from "../module/liquid/compile.js";
import { moduleParameters, moduleReads, pick } from "../module/liquid/context.js";
import { FieldTemplateError, renderSpec, specSecrets } from "../module/liquid/spec.js";
import { formatPath } from "../module/parse.js";
import { masker, TEMPLATE_MARK, TemplateError } from "../module/template.js";
import type { ModuleResource } from "../module/types.js";
import type { ModuleSource, RenderAgent } from "./render-types.js";

/**
 * Rendering of version-2 modules (module/liquid): the context of one module for one agent, a
 * resource's spec rendered over it, and what a snapshot records to render it again exactly.
 */

export const isV2 = (s: ModuleSource): boolean => s.parsed.version === 2;

/** Secret names a version-2 resource reads (static analysis: a computed name is refused at upload). */
export const resourceSecrets = (r: ModuleResource): string[] => specSecrets(r.spec);

const agentOf = (agent: RenderAgent) => ({ node_id: agent.nodeId ?? "", name: agent.name ?? "" });

/**
 * The context of one module for one agent: the recorded inputs of a drift check, else the
 * agent's current attributes, tags and values and the assignment's parameters resolved over them.
 */
export function contextOf(
  s: ModuleSource,
  agent: RenderAgent,
  secrets: Readonly<Record<string, string>>,
): TemplateContext {
  const attributes = s.inputs?.attributes ?? agent.attributes;
  const tags = s.inputs?.tags ?? agent.tags;
  const values = s.inputs?.values ?? agent.values ?? {};
  const who = agentOf(agent);
  const parameters =
    s.inputs?.parameters ??
    moduleParameters(s.name, s.parsed.parameters, s.parameters, { values, attributes, tags, agent: who });
  return { values, parameters, attributes, tags, secrets, agent: who };
}

/**
 * Renders one resource's spec. A failure is a TemplateError naming `<module>/<id>`, the field and
 * the template's line; a secret value in LiquidJS's message is masked.
 */
export function renderResourceV2(s: ModuleSource, r: ModuleResource, ctx: TemplateContext): Record<string, unknown> {
  try {
    return resolveSource(s, r, renderSpec(r.spec, ctx));
  } catch (err) {
    if (!(err instanceof FieldTemplateError)) throw err;
    const mask = masker(Object.values(ctx.secrets));
    throw new TemplateError(
      mask(`${s.name}/${r.id}: field '${formatPath(err.path)}' template line ${err.line}: ${err.message}`),
    );
  }
}

/**
 * A templated `source:` (say `files/bin/{{ attributes.arch }}/app`) names a bundle file or a blob
 * only once rendered: a bundle path becomes the file's digest here, so the blob is shipped and the
 * agent reads a digest as always. A source the bundle lacks fails this agent's render, before
 * anything is sent; a digest that is not stored fails the shipping step, also before the apply.
 */
function resolveSource(s: ModuleSource, r: ModuleResource, spec: Record<string, unknown>): Record<string, unknown> {
  const raw = r.spec.source;
  if (typeof raw !== "string" || !raw.includes(TEMPLATE_MARK) || !BLOB_SOURCE_TYPES.has(r.type)) return spec;
  const source = spec.source;
  if (typeof source === "string" && BLOB_DIGEST.test(source)) return spec;
  const file = typeof source === "string" && isBundleRef(source) ? s.parsed.bundle.get(source) : undefined;
  if (!file)
    throw new TemplateError(
      `${s.name}/${r.id}: source rendered to ${JSON.stringify(source)}, which is ${
        typeof source === "string" && isBundleRef(source)
          ? `not a file of the module's bundle (${s.parsed.bundle.size} files)`
          : "neither files/<path> nor a blob digest"
      }`,
    );
  return { ...spec, source: file.digest };
}

/**
 * What a snapshot of a version-2 module keeps: the attributes, tags and top-level values keys its
 * templates read (all of a namespace read whole or by a computed key), and the resolved
 * parameters. Only the values read are kept, not the agent's whole merged map: a value set is
 * shared by the fleet and may be large, and a key no template reads cannot change a render.
 */
export function usedInputsV2(s: ModuleSource, agent: RenderAgent) {
  const reads = moduleReads(s.parsed.resources);
  const values = s.inputs?.values ?? agent.values ?? {};
  let parameters: Readonly<Record<string, unknown>>;
  try {
    parameters = contextOf(s, agent, {}).parameters;
  } catch (err) {
    // The apply rendered them for this agent; a snapshot is never refused over them.
    if (!(err instanceof TemplateError)) throw err;
    parameters = {};
  }
  return {
    attributes: pick(s.inputs?.attributes ?? agent.attributes, reads.attributes),
    tags: pick(s.inputs?.tags ?? agent.tags, reads.tags),
    values: pick(values, reads.values),
    parameters: { ...parameters },
  };
}
