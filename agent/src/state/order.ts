import { AgentError } from "../runtime.js";

export interface Node {
  key: string;
  requires: string[];
  /** Resources whose change this one waits for (`onchanges`): it runs after them. */
  onchanges?: string[];
  /** Resources whose change refreshes this one (`triggered_by`): it runs after all of them. */
  triggeredBy?: string[];
}

/** Every edge a node runs after: requires, onchanges and triggered_by. */
const afterOf = (n: Node): string[] => [...n.requires, ...(n.onchanges ?? []), ...(n.triggeredBy ?? [])];

/**
 * Orders resources so each comes after what it requires, waits for (onchanges) or is refreshed by
 * (triggered_by): a service then restarts once, after every change that asked for it. Ties keep
 * the request order, so the same module always runs the same way. Keys are `<module>/<id>`; an
 * unknown or cyclic edge is a malformed request (the state service validates this first).
 */
export function topoOrder<T extends Node>(nodes: readonly T[]): T[] {
  const index = new Map<string, number>();
  nodes.forEach((n, i) => {
    if (index.has(n.key))
      throw new AgentError("INVALID_ARGUMENT", "duplicate_resource", `resource ${n.key} appears twice`);
    index.set(n.key, i);
  });
  const pending = nodes.map((n) => {
    for (const r of afterOf(n)) {
      if (!index.has(r))
        throw new AgentError(
          "INVALID_ARGUMENT",
          "unknown_requires",
          `resource ${n.key} requires ${r}, which is not in the request`,
        );
      if (r === n.key) throw new AgentError("INVALID_ARGUMENT", "cyclic_requires", `resource ${n.key} requires itself`);
    }
    return new Set(afterOf(n));
  });
  const done = new Set<string>();
  const out: T[] = [];
  while (out.length < nodes.length) {
    const i = nodes.findIndex((n, j) => !done.has(n.key) && [...pending[j]!].every((r) => done.has(r)));
    if (i < 0) {
      const stuck = nodes.filter((n) => !done.has(n.key)).map((n) => n.key);
      throw new AgentError("INVALID_ARGUMENT", "cyclic_requires", `requires form a cycle among: ${stuck.join(", ")}`);
    }
    done.add(nodes[i]!.key);
    out.push(nodes[i]!);
  }
  return out;
}
