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
const ACTOR_OPERATOR = ["actor_type = 'operator' AND actor_id = ", "actor_type = 'operator' AND actor_name = "];

/** Conditions every row must meet, apart from the agent/operator "driver" conditions. */
function commonConditions(f: Filter, p: Params, opts: { operatorInline: boolean }): string[] {
  const w: string[] = [];
  if (f.after !== undefined) w.push(`id >= ${p.add(ulidFloor(f.after - ID_TIME_SKEW_MS))}`, `ts >= ${p.add(f.after)}`);
  if (f.before !== undefined) w.push(`id < ${p.add(ulidFloor(f.before + ID_TIME_SKEW_MS))}`, `ts < ${p.add(f.before)}`);
  if (f.eventType !== undefined) w.push(`event_type = ${p.add(f.eventType)}`);
  if (f.category !== undefined) w.push(categoryCondition(f.category, p));
  if (opts.operatorInline && f.operator !== undefined) {
    const o = p.add(f.operator);
    w.push(`(${ACTOR_OPERATOR.map((c) => `(${c}${o})`).join(" OR ")})`);
  }
  return w;
}

function categoryCondition(category: string, p: Params): string {
  const depth = category.split(".").length;
  const c = p.add(category);
  if (depth === 1) return `cat1 = ${c}`;
  if (depth === 2) return `cat2 = ${c}`;
  return `(event_type = ${c} OR starts_with(event_type, ${c} || '.'))`;
}

export const EVENT_COLUMNS =
  "id, ts, event_type, severity, summary, actor_id, actor_name, actor_type, target_id, target_name, target_type, metadata";

/**
 * One page, newest first. The agent filter (4 ways to match) and the operator filter (2 ways)
 * become a UNION of per-index branches, each an ordered range scan stopped after `limit` rows.
 */
export function listQuery(f: Filter, cursor: string | undefined, limit: number): { text: string; values: unknown[] } {
  const p = new Params();
  let branches: string[] = ["TRUE"];
  if (f.agent !== undefined) {
    const a = p.add(f.agent);
    branches = [...ACTOR_AGENT, ...TARGET_AGENT].map((c) => `${c}${a}`);
  } else if (f.operator !== undefined) {
    const o = p.add(f.operator);
    branches = ACTOR_OPERATOR.map((c) => `${c}${o}`);
  }
  const common = commonConditions(f, p, { operatorInline: f.agent !== undefined });
  if (cursor !== undefined) common.push(`id < ${p.add(cursor)}`);
  const n = p.add(limit);
  const select = (branch: string) =>
    `SELECT ${EVENT_COLUMNS} FROM events WHERE ${[branch, ...common].join(" AND ")} ORDER BY id DESC LIMIT ${n}`;
  if (branches.length === 1) return { text: select(branches[0]!), values: p.values };
  const union = branches.map((b) => `(${select(b)})`).join(" UNION ALL ");
  return { text: `SELECT DISTINCT ON (id) * FROM (${union}) u ORDER BY id DESC LIMIT ${n}`, values: p.values };
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
    w.push(`(${[...ACTOR_AGENT, ...TARGET_AGENT].map((c) => `(${c}${a})`).join(" OR ")})`);
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
