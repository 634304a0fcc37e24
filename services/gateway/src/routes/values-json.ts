import { z } from "zod";
import type { AgentValues, ValueOrigin, ValueSet } from "@orch/contracts";
import { iso } from "../schemas.js";

export const ValueSetOut = z.object({
  name: z.string(),
  selector: z.string().nullable().describe("null for `defaults`"),
  priority: z.number().int(),
  description: z.string(),
  key_count: z.number().int().describe("leaf key paths"),
  sha256: z.string().describe("of the YAML text"),
  updated_at: z.string().describe("RFC 3339"),
  updated_by: z.string(),
  updated_by_name: z.string(),
  source: z
    .string()
    .nullable()
    .describe("the git source managing the set (docs/sources.md); null when set through the API"),
  commit: z.string().nullable(),
});
export const ValueSetDetailOut = ValueSetOut.extend({
  values: z.record(z.string(), z.unknown()),
  content: z.string().describe("the YAML text origins' lines refer to"),
});

const OriginOut = z.object({
  set: z.string().nullable().describe("the set's name; null for the agent's own values"),
  layer: z.enum(["defaults", "set", "agent"]),
  priority: z.number().int(),
  line: z.number().int().nullable().describe("line in the set's YAML text"),
  path: z.string().describe("the key path this contribution set"),
});
export const AgentValuesOut = z.object({
  node_id: z.string(),
  name: z.string(),
  values: z.record(z.string(), z.unknown()).describe("the merged values modules read as `values`"),
  origins: z
    .array(
      z.object({
        path: z.string().describe("a leaf key path, dotted"),
        value: z.unknown(),
        origin: OriginOut,
        overridden: z.array(OriginOut).describe("the contributions it replaced, lowest layer first"),
      }),
    )
    .describe("every leaf key path of `values`, in path order"),
  sets: z.array(z.string()).describe("the sets that apply, lowest first"),
  own: z.record(z.string(), z.unknown()).describe("the agent's own values (the highest layer)"),
  own_content: z.string(),
});

export const valueSetJson = (s: ValueSet) => ({
  name: s.name,
  selector: s.selector || null,
  priority: s.priority,
  description: s.description,
  key_count: s.keyCount,
  sha256: s.sha256,
  updated_at: iso(s.updatedAt),
  updated_by: s.updatedBy,
  updated_by_name: s.updatedByName,
  source: s.source || null,
  commit: s.commit || null,
});

export const valueSetDetailJson = (s: ValueSet) => ({ ...valueSetJson(s), values: s.values ?? {}, content: s.content });

const originJson = (o: ValueOrigin | undefined) => ({
  set: o?.set || null,
  layer: (o?.layer ?? "set") as "defaults" | "set" | "agent",
  priority: o?.priority ?? 0,
  line: o?.line || null,
  path: o?.path ?? "",
});

function at(values: Record<string, unknown>, path: string): unknown {
  let cur: unknown = values;
  for (const k of path.split(".")) cur = (cur as Record<string, unknown> | undefined)?.[k];
  return cur;
}

export const agentValuesJson = (v: AgentValues) => {
  const values = v.values ?? {};
  return {
    node_id: v.nodeId,
    name: v.name,
    values,
    origins: v.keys.map((k) => ({
      path: k.path,
      value: at(values, k.path),
      origin: originJson(k.origin),
      overridden: k.overridden.map(originJson),
    })),
    sets: v.sets,
    own: v.own ?? {},
    own_content: v.ownContent,
  };
};
