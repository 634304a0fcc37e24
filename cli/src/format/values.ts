/** Value sets and an agent's merged values with origins, as tables, fields and explanations (pure). */
import type { ResponseBody } from "@orch/client";

export type ValueSetPage = ResponseBody<"/api/v1/values", "get">;
export type ValueSetDetail = ResponseBody<"/api/v1/values/{name}", "get">;
export type AgentValues = ResponseBody<"/api/v1/agents/{node_id}/values", "get">;
type KeyOrigin = AgentValues["origins"][number];
type Origin = KeyOrigin["origin"];

export const VALUE_SET_COLUMNS = ["NAME", "SELECTOR", "PRIORITY", "KEYS", "UPDATED", "BY", "SOURCE"];

export function valueSetRows(sets: ValueSetPage["sets"]): unknown[][] {
  return sets.map((s) => [
    s.name,
    s.selector ?? "(all: defaults)",
    s.selector === null ? "-" : s.priority,
    s.key_count,
    s.updated_at,
    s.updated_by_name || s.updated_by,
    s.source ?? "",
  ]);
}

export function valueSetFields(s: ValueSetDetail): [string, unknown][] {
  return [
    ["name", s.name],
    ["selector", s.selector ?? "(none: the defaults set, lowest layer)"],
    ["priority", s.selector === null ? "-" : s.priority],
    ["description", s.description],
    ["keys", s.key_count],
    ["updated_at", s.updated_at],
    ["updated_by", s.updated_by_name || s.updated_by],
    ...(s.source ? ([["source", `${s.source} @ ${(s.commit ?? "").slice(0, 7)}`]] as [string, unknown][]) : []),
    ["sha256", s.sha256],
  ];
}

/** A value on one line: JSON, so a string reads quoted and a list as a list. */
export const valueText = (v: unknown) => (v === undefined ? "(none)" : JSON.stringify(v));

/** Where a contribution came from: `prod (priority 10), line 3`, `defaults, line 2`, `agent's own values, line 1`. */
export function originText(o: Origin): string {
  const who =
    o.layer === "agent"
      ? "agent's own values"
      : o.layer === "defaults"
        ? (o.set ?? "defaults")
        : `${o.set} (priority ${o.priority})`;
  return o.line ? `${who}, line ${o.line}` : who;
}

export const AGENT_VALUE_COLUMNS = ["KEY", "VALUE", "FROM", "OVERRODE"];

export function agentValueRows(v: AgentValues): unknown[][] {
  return v.origins.map((k) => [
    k.path,
    valueText(k.value),
    originText(k.origin),
    k.overridden.map((o) => o.set ?? "agent").join(", "),
  ]);
}

/**
 * The key origins that answer for `path`: the leaf itself, every leaf under a map at `path`, or
 * the leaf above it (a list or scalar holding the path).
 */
export function keysFor(v: AgentValues, path: string): KeyOrigin[] {
  const exact = v.origins.filter((k) => k.path === path || k.path.startsWith(`${path}.`));
  return exact.length ? exact : v.origins.filter((k) => path.startsWith(`${k.path}.`));
}

/** `values explain`: the winning value, its origin, and each contribution it overrode (lowest first). */
export function explainLines(keys: readonly KeyOrigin[]): string[] {
  const out: string[] = [];
  for (const k of keys) {
    out.push(`${k.path} = ${valueText(k.value)}`);
    out.push(`  from: ${originText(k.origin)}`);
    if (k.overridden.length === 0) out.push("  overrode: nothing (no lower layer sets it)");
    else {
      out.push("  overrode:");
      for (const o of k.overridden) out.push(`    ${originText(o)}${o.path !== k.path ? ` (${o.path})` : ""}`);
    }
  }
  return out;
}
