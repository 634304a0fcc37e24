import { RESTARTABLE_TYPES, type ReasonFor } from "@orch/contracts";
import type { OrchError } from "@orch/kit";
import type { ModuleResource, ParsedModule } from "./types.js";

/**
 * `onchanges`, `notify` and `watch` (version 2): checked at upload with their YAML lines, and
 * expanded into what the agent runs by (StateResource `onchanges` / `triggered_by`).
 *  - `onchanges: [a]` on r: r runs only when a changed in the operation (after a).
 *  - `notify: [t]` on s: t is refreshed when s changed — a service restarts (or reloads), an exec runs.
 *  - `watch: [s]` on t: `requires: [s]` plus s notifying t.
 */
export const TRIGGER_FIELDS = ["onchanges", "notify", "watch"] as const;
export type TriggerField = (typeof TRIGGER_FIELDS)[number];

/** What a notify or watch can refresh: a service or unit (restart/reload) or an exec (run only when triggered). */
const REFRESHABLE: ReadonlySet<string> = new Set([...RESTARTABLE_TYPES, "exec"]);

/** One id or a list, as `requires` is written; duplicates dropped. */
export const idList = (v: string | readonly string[] | undefined): string[] =>
  v === undefined ? [] : typeof v === "string" ? [v] : [...new Set(v)];

type Refuse = (
  reason: ReasonFor<"INVALID_ARGUMENT">,
  path: ReadonlyArray<string | number>,
  message: string,
  keyNode?: boolean,
) => OrchError;

/**
 * Refuses triggers in a version-1 module, ids that are not resources of the module (with the
 * index of the id in a list), a resource naming itself, and notify/watch on a type that cannot be
 * refreshed; then folds `watch` into `requires`. The caller checks cycles over dependencyEdges.
 */
export function checkTriggers(
  version: number | undefined,
  resources: ModuleResource[],
  raws: readonly unknown[],
  refuse: Refuse,
): void {
  const index = new Map(resources.map((r, i) => [r.id, i]));
  resources.forEach((r, i) => {
    const raw = (raws[i] ?? {}) as Record<string, unknown>;
    for (const field of TRIGGER_FIELDS) {
      if (r[field].length === 0) continue;
      if (version !== 2) throw refuse("invalid_module", ["resources", i, field], `${field} needs version: 2`, true);
      for (const id of r[field]) {
        const j = Array.isArray(raw[field]) ? (raw[field] as unknown[]).indexOf(id) : -1;
        const at = ["resources", i, field, ...(j >= 0 ? [j] : [])];
        const target = index.get(id);
        if (target === undefined)
          throw refuse("unknown_requirement", at, `${field} '${id}', which is not a resource of this module`);
        if (id === r.id) throw refuse("cyclic_requires", at, `${field} names the resource itself`);
        if (field === "notify" && !REFRESHABLE.has(resources[target]!.type))
          throw refuse("invalid_module", at, refreshableOnly(`notify '${id}', a ${resources[target]!.type},`));
      }
    }
    if (r.watch.length > 0 && !REFRESHABLE.has(r.type))
      throw refuse("invalid_module", ["resources", i, "watch"], refreshableOnly(`watch on a ${r.type}`), true);
    if (RESTARTABLE_TYPES.has(r.type) && r.spec.refresh !== undefined && version !== 2)
      throw refuse("invalid_module", ["resources", i, "refresh"], "refresh needs version: 2", true);
  });
  for (const r of resources) r.requires = [...new Set([...r.requires, ...r.watch])];
}

const refreshableOnly = (what: string) =>
  `${what} cannot be refreshed: notify and watch work on a service or systemd_unit (restarted, or reloaded with refresh: reload) or an exec (run only when triggered); use requires or onchanges to order anything else`;

export const hasTriggers = (r: ModuleResource) => TRIGGER_FIELDS.some((f) => r[f].length > 0);

/** Who notifies each resource: its own watch list and every resource whose notify names it. */
function notifiers(resources: readonly ModuleResource[]): Map<string, string[]> {
  const out = new Map<string, string[]>(resources.map((r) => [r.id, [...r.watch]]));
  for (const s of resources) for (const t of s.notify) out.get(t)?.push(s.id);
  for (const [k, v] of out) out.set(k, [...new Set(v)]);
  return out;
}

/** Every edge a resource runs after (requires, onchanges, watch, and the resources notifying it): for the cycle check. */
export function dependencyEdges(resources: readonly ModuleResource[]): Map<string, string[]> {
  const by = notifiers(resources);
  return new Map(resources.map((r) => [r.id, [...new Set([...r.requires, ...r.onchanges, ...(by.get(r.id) ?? [])])]]));
}

export interface TriggerKeys {
  /** Keys `<module>/<id>`: runs only after one of them changed. */
  onchanges: string[];
  /** Keys `<module>/<id>`: a change of one refreshes this service. */
  triggeredBy: string[];
}

const NONE: Partial<TriggerKeys> = Object.freeze({});

/** Ids, per resource that has any, worked out once per parsed module (a fan-out renders it per agent). */
const expanded = new WeakMap<ParsedModule, Map<string, TriggerKeys>>();

/**
 * The agent's fields for a resource of a module (keys `<module>/<id>`): an exec notified runs only
 * when triggered (onchanges), a service notified is refreshed (triggered_by). A resource without
 * them gets neither field, so what is sent for a module without triggers is as it always was.
 */
export function triggerKeys(parsed: ParsedModule, module: string, id: string): Partial<TriggerKeys> {
  let m = expanded.get(parsed);
  if (!m) {
    m = new Map();
    const by = notifiers(parsed.resources);
    for (const r of parsed.resources) {
      const from = by.get(r.id) ?? [];
      if (r.onchanges.length === 0 && from.length === 0) continue;
      const service = RESTARTABLE_TYPES.has(r.type);
      m.set(r.id, {
        onchanges: [...new Set([...r.onchanges, ...(service ? [] : from)])],
        triggeredBy: service ? from : [],
      });
    }
    expanded.set(parsed, m);
  }
  const ids = m.get(id);
  if (!ids) return NONE;
  const key = (dep: string) => `${module}/${dep}`;
  return {
    ...(ids.onchanges.length ? { onchanges: ids.onchanges.map(key) } : {}),
    ...(ids.triggeredBy.length ? { triggeredBy: ids.triggeredBy.map(key) } : {}),
  };
}

/**
 * `keys` plus every resource that reacts to one of them (onchanges, notify, watch), transitively:
 * an enforcement that re-applies a drifted config file must also restart the service it notifies,
 * or the corrected file would not be in effect.
 */
export function withReactors(sources: ReadonlyArray<{ name: string; parsed: ParsedModule }>, keys: Iterable<string>) {
  const out = new Set(keys);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of sources) {
      for (const r of s.parsed.resources) {
        const key = `${s.name}/${r.id}`;
        if (out.has(key)) continue;
        const t = triggerKeys(s.parsed, s.name, r.id);
        if ([...(t.onchanges ?? []), ...(t.triggeredBy ?? [])].some((k) => out.has(k))) {
          out.add(key);
          grew = true;
        }
      }
    }
  }
  return out;
}
