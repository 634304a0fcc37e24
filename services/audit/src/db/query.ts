import { AUDIT_AGENT_METADATA_KEYS } from "@orch/contracts";
import { ID_TIME_SKEW_MS, ulidFloor } from "../ulid-time.js";
import type { Filter } from "../validate.js";

// The SQL a validated filter becomes: list pages (newest first) and the live tail (storage order).

/** Collects positional parameters for one statement. */
class Params {
  readonly values: unknown[] = [];
  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}

const ACTOR_AGENT = ["actor_type = 'agent' AND actor_id = ", "actor_type = 'agent' AND actor_name = "];
const TARGET_AGENT = ["target_type = 'agent' AND target_id = ", "target_type = 'agent' AND target_name = "];
// The key test repeats the partial indexes' predicate (migration 0004) so the planner uses them.
const METADATA_AGENT = AUDIT_AGENT_METADATA_KEYS.map((k) => `metadata ? '${k}' AND (metadata ->> '${k}') = `);
/** Every way an event can be about an agent: one index each. */
const ABOUT_AGENT = [...ACTOR_AGENT, ...TARGET_AGENT, ...METADATA_AGENT];
const ACTOR_OPERATOR = ["actor_type = 'operator' AND actor_id = ", "actor_type = 'operator' AND actor_name = "];

/**
 * Conditions every row must meet, apart from the agent/operator "driver" conditions (and the
 * category, when the caller has made its event types the branches instead).
 */
function commonConditions(f: Filter, p: Params, opts: { operatorInline: boolean; category?: boolean }): string[] {
  const w: string[] = [];
  if (f.after !== undefined) w.push(`id >= ${p.add(ulidFloor(f.after - ID_TIME_SKEW_MS))}`, `ts >= ${p.add(f.after)}`);
  if (f.before !== undefined) w.push(`id < ${p.add(ulidFloor(f.before + ID_TIME_SKEW_MS))}`, `ts < ${p.add(f.before)}`);
  if (f.eventType !== undefined) w.push(`event_type = ${p.add(f.eventType)}`);
  if (f.category !== undefined && opts.category !== false) w.push(categoryCondition(f.category, p));
  if (opts.operatorInline && f.operator !== undefined) {
    const o = p.add(f.operator);
    w.push(`(${ACTOR_OPERATOR.map((c) => `(${c}${o})`).join(" OR ")})`);
  }
  return w;
}

/** The type is the category or starts with it and a dot (the live tail's rule, matchesFilter). */
function categoryCondition(category: string, p: Params, column = "event_type"): string {
  const c = p.add(category);
  return `(${column} = ${c} OR starts_with(${column}, ${c} || '.'))`;
}

export const EVENT_COLUMNS =
  "id, ts, event_type, severity, summary, actor_id, actor_name, actor_type, target_id, target_name, target_type, metadata";

/** Whether a list page goes through the category's event types (categoryTypesQuery) first. */
export function byCategoryTypes(f: Filter): f is Filter & { category: string } {
  return f.category !== undefined && f.agent === undefined && f.operator === undefined && f.eventType === undefined;
}

/**
 * The event types stored under a category, for a category page (which has no index of its own):
 * one descent of the (event_type, id) index per distinct type from c, so a few dozen at most. The
 * types of a category lie in [c, c || '/'): in the C collation everything starting with "c." sorts
 * there ('/' follows '.'), along with a few that merely start with c (c-x), dropped by the category
 * condition. Dropping the category columns and their two indexes cut the cost of every insert.
 */
export function categoryTypesQuery(category: string): { text: string; values: unknown[] } {
  const p = new Params();
  const lo = p.add(category);
  const hi = p.add(`${category}/`);
  return {
    text: `WITH RECURSIVE types(t) AS (
             SELECT min(event_type) FROM events WHERE event_type >= ${lo} AND event_type < ${hi}
             UNION ALL
             SELECT (SELECT min(event_type) FROM events WHERE event_type > types.t AND event_type < ${hi})
             FROM types WHERE types.t IS NOT NULL)
           SELECT t AS event_type FROM types WHERE ${categoryCondition(category, p, "t")}`,
    values: p.values,
  };
}

/**
 * One page, newest first. The agent filter (6 ways to match) and the operator filter (2 ways)
 * become a UNION of per-index branches, each an ordered range scan stopped after `limit` rows; a
 * category alone becomes one branch per event type it holds (`types`, from categoryTypesQuery),
 * each planned with that type's statistics as the event_type filter is (given as "=" on an outer
 * value instead, a rare type would be read by walking the primary key through the whole table).
 */
export function listQuery(
  f: Filter,
  cursor: string | undefined,
  limit: number,
  types?: readonly string[],
): { text: string; values: unknown[] } {
  const p = new Params();
  let branches: string[] = ["TRUE"];
  let disjoint = true;
  if (types !== undefined) {
    // No type stored under the category: a page that is empty without reading any row.
    branches = types.length ? types.map((t) => `event_type = ${p.add(t)}`) : ["FALSE"];
  } else if (f.agent !== undefined) {
    const a = p.add(f.agent);
    branches = ABOUT_AGENT.map((c) => `${c}${a}`);
    disjoint = false;
  } else if (f.operator !== undefined) {
    const o = p.add(f.operator);
    branches = ACTOR_OPERATOR.map((c) => `${c}${o}`);
    disjoint = false;
  }
  const common = commonConditions(f, p, { operatorInline: f.agent !== undefined, category: types === undefined });
  if (cursor !== undefined) common.push(`id < ${p.add(cursor)}`);
  const n = p.add(limit);
  const select = (branch: string) =>
    `SELECT ${EVENT_COLUMNS} FROM events WHERE ${[branch, ...common].join(" AND ")} ORDER BY id DESC LIMIT ${n}`;
  if (branches.length === 1) return { text: select(branches[0]!), values: p.values };
  const union = branches.map((b) => `(${select(b)})`).join(" UNION ALL ");
  return {
    text: `SELECT ${disjoint ? "" : "DISTINCT ON (id) "}* FROM (${union}) u ORDER BY id DESC LIMIT ${n}`,
    values: p.values,
  };
}

/**
 * Events stored after `position` (storage order) together with the head position, in one
 * statement so both come from the same snapshot.
 */
export function tailQuery(f: Filter, position: number, limit: number): { text: string; values: unknown[] } {
  const p = new Params();
  const w = commonConditions(f, p, { operatorInline: true });
  if (f.agent !== undefined) {
    const a = p.add(f.agent);
    w.push(`(${ABOUT_AGENT.map((c) => `(${c}${a})`).join(" OR ")})`);
  }
  const pos = p.add(position);
  const n = p.add(limit);
  return {
    text: `WITH h AS (SELECT coalesce(max(seq), 0) AS head FROM events),
           page AS (SELECT ${EVENT_COLUMNS}, seq FROM events WHERE seq > ${pos} AND seq <= (SELECT head FROM h)${w.length ? ` AND ${w.join(" AND ")}` : ""} ORDER BY seq LIMIT ${n})
           SELECT h.head, page.* FROM h LEFT JOIN page ON true ORDER BY page.seq`,
    values: p.values,
  };
}
