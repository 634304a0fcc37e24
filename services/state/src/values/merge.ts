import { DEFAULTS_VALUE_SET, matchSelector, parseSelector, type Selector } from "@orch/contracts";
import { isValueMap, type ValueMap } from "./parse.js";

/**
 * Values are layered: `defaults` → the selector-bound sets an agent matches, ascending priority
 * (equal priorities by name: the later name wins) → the agent's own values. Maps merge key by key
 * at any depth; anything else (a list, a scalar, null) replaces what a lower layer had at that path.
 * Pure: the loader (load.ts) reads the sets, the handlers and the engine call these.
 */

export type Layer = "defaults" | "set" | "agent";

/** One layer as merging needs it: its values and the line of each leaf key path in its YAML text. */
export interface ValueLayer {
  set: string;
  layer: Layer;
  priority: number;
  values: ValueMap;
  lines: Readonly<Record<string, number>>;
}

/** Where one contribution to a key path came from. */
export interface Origin {
  set: string;
  layer: Layer;
  priority: number;
  /** Line of the key in the set's YAML text (0 when unknown). */
  line: number;
  /** The path it set: the winner's own path, or (for what it overrode) a parent or child of it. */
  path: string;
}

/** A leaf key path of the merged values: its winning origin and the contributions it replaced, lowest first. */
export interface KeyOrigin {
  path: string;
  origin: Origin;
  overridden: Origin[];
}

/** A set as stored, as far as choosing and merging needs. */
export interface StoredSet {
  name: string;
  selector: string;
  priority: number;
  values: ValueMap;
  lines: Readonly<Record<string, number>>;
}

/** Sets with their selectors parsed once, in layer order; built once per fan-out. */
export interface PreparedSets {
  defaults?: StoredSet;
  bound: ReadonlyArray<{ set: StoredSet; selector: Selector }>;
}

/** The order of selector-bound sets: ascending priority, then name, so the last one wins. */
export function layerOrder(a: { priority: number; name: string }, b: { priority: number; name: string }): number {
  return a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

export function prepareSets(sets: readonly StoredSet[]): PreparedSets {
  const defaults = sets.find((s) => s.name === DEFAULTS_VALUE_SET);
  const bound = sets
    .filter((s) => s.name !== DEFAULTS_VALUE_SET)
    .sort(layerOrder)
    .flatMap((set) => {
      // A stored selector was checked when written; one that no longer parses matches nobody.
      try {
        return [{ set, selector: parseSelector(set.selector) }];
      } catch {
        return [];
      }
    });
  return defaults ? { defaults, bound } : { bound };
}

export interface AgentTarget {
  nodeId: string;
  name: string;
  tags: Record<string, string>;
  attributes: Record<string, string>;
}

/** The layers of one agent, lowest first: defaults, the sets its selector matches, its own values. */
export function layersFor(
  prepared: PreparedSets,
  agent: AgentTarget,
  own?: { values: ValueMap; lines: Readonly<Record<string, number>> },
): ValueLayer[] {
  const target = { node_id: agent.nodeId, name: agent.name, tags: agent.tags, attributes: agent.attributes };
  const out: ValueLayer[] = [];
  const d = prepared.defaults;
  if (d) out.push({ set: d.name, layer: "defaults", priority: 0, values: d.values, lines: d.lines });
  for (const { set, selector } of prepared.bound)
    if (matchSelector(selector, target))
      out.push({ set: set.name, layer: "set", priority: set.priority, values: set.values, lines: set.lines });
  if (own) out.push({ set: "", layer: "agent", priority: 0, values: own.values, lines: own.lines });
  return out;
}

/** `b` over `a`: maps merge, anything else replaces. Neither input is modified (sets are shared by every agent). */
function over(a: ValueMap, b: ValueMap): ValueMap {
  const out: ValueMap = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = isValueMap(prev) && isValueMap(v) ? over(prev, v) : v;
  }
  return out;
}

/** The merged values of these layers (lowest first). */
export function mergeLayers(layers: readonly ValueLayer[]): ValueMap {
  let out: ValueMap = {};
  for (const l of layers) out = over(out, l.values);
  return out;
}

/** Takes out every key origin at `path` or under it; returns what they had set, lowest layer first. */
function displace(keys: Map<string, KeyOrigin>, path: string): Origin[] {
  const out: Origin[] = [];
  for (const [p, k] of keys) {
    if (p === path || p.startsWith(`${path}.`)) {
      out.push(...k.overridden, k.origin);
      keys.delete(p);
    }
  }
  return out;
}

function record(
  keys: Map<string, KeyOrigin>,
  l: ValueLayer,
  values: ValueMap,
  prefix: string,
  merged: unknown,
  inherited: Origin[],
): void {
  for (const [k, v] of Object.entries(values)) {
    const path = prefix ? `${prefix}.${k}` : k;
    const below = isValueMap(merged) ? merged[k] : undefined;
    if (isValueMap(v) && (Object.keys(v).length > 0 || isValueMap(below))) {
      // A map over a scalar or list replaces it: the leaves under it overrode that.
      const replaced = isValueMap(below) ? [] : displace(keys, path);
      record(keys, l, v, path, below, [...inherited, ...replaced]);
      continue;
    }
    const overridden = [...inherited, ...displace(keys, path)];
    const origin: Origin = { set: l.set, layer: l.layer, priority: l.priority, line: l.lines[path] ?? 0, path };
    keys.set(path, { path, origin, overridden });
  }
}

/** The merged values and, for every leaf key path, where it came from and what it overrode. */
export function mergeWithOrigins(layers: readonly ValueLayer[]): { values: ValueMap; keys: KeyOrigin[] } {
  const keys = new Map<string, KeyOrigin>();
  let merged: ValueMap = {};
  for (const l of layers) {
    record(keys, l, l.values, "", merged, []);
    merged = over(merged, l.values);
  }
  return { values: merged, keys: [...keys.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
}

/** The key origin that answers for `path`: the leaf itself, or the leaf above it (a list or scalar holding it). */
export function explainPath(keys: readonly KeyOrigin[], path: string): KeyOrigin[] {
  const exact = keys.filter((k) => k.path === path || k.path.startsWith(`${path}.`));
  if (exact.length) return exact;
  return keys.filter((k) => path.startsWith(`${k.path}.`));
}
