import type { Actor, Emit, Queryable } from "@orch/kit";
import type { SourceFileErrorRow } from "../db/sources.js";
import { valueSetsDb, type ValueSetRow } from "./tables.js";
import { valueSetRow } from "./define.js";
import type { TreeValueSet } from "./source-file.js";

/** What a sync writes of a tree's value sets, and the sets it may not take over. */
export interface ValueSetsDiff {
  written: Array<{ row: ValueSetRow; old?: ValueSetRow }>;
  removed: ValueSetRow[];
  errors: SourceFileErrorRow[];
}

const same = (old: ValueSetRow, row: ValueSetRow) =>
  old.sha256 === row.sha256 &&
  old.selector === row.selector &&
  old.priority === row.priority &&
  old.description === row.description;

/**
 * The tree's sets against the catalog rows of their names and of every set `source` manages (read
 * locked). A set owned elsewhere (the API, another source) is a conflict, as for modules.
 */
export async function diffValueSets(
  db: Queryable,
  at: { source: string; commit: string; now: number; actor: Actor },
  sets: readonly TreeValueSet[],
): Promise<ValueSetsDiff> {
  const rows = await valueSetsDb.ofSource(
    db,
    at.source,
    sets.map((s) => s.name),
  );
  const byName = new Map(rows.map((r) => [r.name, r]));
  const d: ValueSetsDiff = { written: [], removed: [], errors: [] };
  const by = { id: at.actor.id, name: at.actor.name, at: at.now };
  for (const s of sets) {
    const old = byName.get(s.name);
    if (old && old.source !== at.source) {
      const owner = old.source === null ? "was set through the API" : `is managed by git source '${old.source}'`;
      d.errors.push({
        file: s.file,
        line: 1,
        column: 0,
        code: "managed_by_source",
        message: `value set '${s.name}' ${owner}: delete it there or rename the file`,
      });
      continue;
    }
    const row = valueSetRow(s, s.parsed, by, { source: at.source, commit: at.commit });
    if (!old || !same(old, row)) d.written.push(old ? { row, old } : { row });
  }
  const inTree = new Set(sets.map((s) => s.name));
  for (const r of rows) if (r.source === at.source && !inTree.has(r.name)) d.removed.push(r);
  return d;
}

/** Writes the diff inside the sync's transaction, with the API's events (metadata gains source and commit). */
export async function applyValueSets(
  db: Queryable,
  emit: Emit,
  at: { source: string; commit: string; actor: Actor },
  d: ValueSetsDiff,
): Promise<number> {
  const origin = { source: at.source, commit: at.commit };
  const by = `${at.actor.name} @ ${at.commit.slice(0, 7)}`;
  for (const { row, old } of d.written) {
    await valueSetsDb.upsert(db, row);
    await emit({
      type: "values.set_updated",
      summary: `value set ${row.name} ${old ? "replaced" : "created"} by ${by} (${row.key_count} keys)`,
      actor: at.actor,
      target: { id: row.name, name: row.name, type: "value_set" },
      metadata: { selector: row.selector, priority: row.priority, sha256: row.sha256, keys: row.key_count, ...origin },
    });
  }
  for (const old of d.removed) {
    await valueSetsDb.remove(db, old.name);
    await emit({
      type: "values.set_deleted",
      summary: `value set ${old.name} deleted by ${by}`,
      actor: at.actor,
      target: { id: old.name, name: old.name, type: "value_set" },
      metadata: { selector: old.selector, priority: old.priority, sha256: old.sha256, ...origin },
    });
  }
  return d.written.length + d.removed.length;
}
