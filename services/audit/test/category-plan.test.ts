import t from "tap";
import pg from "pg";
import { migrate } from "@orch/kit";
import { createTestDatabase } from "@orch/kit/testing";
import { toRow } from "../src/convert.js";
import { eventsDb, type EventRow } from "../src/db/events.js";
import { categoryTypesQuery, listQuery } from "../src/db/query.js";
import { AUDIT_MIGRATIONS, eventFactory } from "./harness.js";

// A category page has no index of its own: it must read each of the category's types in id order
// from where that type's rows are, never walk the whole table filtering on the type, which for a
// rare type reads every row. Judged by the rows the plan read (EXPLAIN ANALYZE), not by time.
const db = await createTestDatabase();
const pool = new pg.Pool({ connectionString: db.url, max: 2, options: "-c search_path=audit" });
pool.on("error", () => {});
await migrate(pool, "audit", AUDIT_MIGRATIONS);
t.teardown(async () => {
  await pool.end();
  await db.drop();
});

interface PlanNode {
  "Node Type": string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/** Rows the table and index scans of a statement produced or filtered away. */
async function rowsRead(q: { text: string; values: unknown[] }): Promise<number> {
  const explained = await pool.query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${q.text}`,
    q.values,
  );
  return nodes(explained.rows[0]!["QUERY PLAN"][0]!.Plan)
    .filter((n) => /^(Seq|Index|Index Only|Bitmap Heap) Scan$/.test(n["Node Type"]))
    .reduce(
      (sum, n) => sum + ((n["Actual Rows"] ?? 0) + (n["Rows Removed by Filter"] ?? 0)) * (n["Actual Loops"] ?? 1),
      0,
    );
}

t.test("a category holding a rare type reads that type's few rows, not the table", async (t) => {
  const event = eventFactory();
  const base = Date.now() - 10 * 86_400_000;
  // The rare type's few events are the oldest; thousands of common ones follow.
  const rows: EventRow[] = [
    ...Array.from({ length: 3 }, (_, i) => toRow(event({ type: "agent.rare", at: base + i })).row),
    ...Array.from(
      { length: 6000 },
      (_, i) => toRow(event({ type: i % 2 ? "agent.connected" : "state.apply.succeeded", at: base + 1000 + i })).row,
    ),
  ];
  for (let i = 0; i < rows.length; i += 1000) await eventsDb.insert(pool, rows.slice(i, i + 1000));
  await pool.query("ANALYZE events");

  for (const [category, expected] of [
    ["agent", ["agent.connected", "agent.rare"]],
    ["agent.rare", ["agent.rare"]],
    ["state", ["state.apply.succeeded"]],
  ] as const) {
    const typesQuery = categoryTypesQuery(category);
    const types = (await pool.query<{ event_type: string }>(typesQuery.text, typesQuery.values)).rows.map(
      (r) => r.event_type,
    );
    t.same(types, expected, `${category}: its types`);
    t.ok((await rowsRead(typesQuery)) <= 10, `${category}: one index probe per type`);
    const page = listQuery({ category }, undefined, 51, types);
    const read = await rowsRead(page);
    t.ok(read <= 300, `${category}: ${read} rows read for a page of 51 (of 6,003)`);
  }
  const none = listQuery({ category: "nothing" }, undefined, 51, []);
  t.equal((await pool.query(none.text, none.values)).rowCount, 0, "a category without types: an empty page");
  const rare = await eventsDb.page(pool, { category: "agent.rare" }, undefined, 50);
  t.equal(rare.length, 3, "the rare type's page");
});

t.test("an agent named only in metadata is found through its index, not by reading the table", async (t) => {
  const event = eventFactory();
  const base = Date.now() - 9 * 86_400_000;
  const session = { id: "s", name: "web-9", type: "terminal_session" };
  // The agent's few events are the oldest; thousands about other agents follow.
  const rows: EventRow[] = [
    ...Array.from(
      { length: 3 },
      (_, i) =>
        toRow(
          event({
            type: "terminal.session.opened",
            at: base + i,
            target: session,
            metadata: { node_id: "n-9", node_name: "web-9" },
          }),
        ).row,
    ),
    ...Array.from(
      { length: 6000 },
      (_, i) =>
        toRow(
          event({
            type: "secret.used",
            at: base + 1000 + i,
            metadata: { node_id: `n-${i % 50}x`, node_name: `w-${i % 50}` },
          }),
        ).row,
    ),
  ];
  for (let i = 0; i < rows.length; i += 1000) await eventsDb.insert(pool, rows.slice(i, i + 1000));
  await pool.query("ANALYZE events");
  for (const agent of ["n-9", "web-9"]) {
    const page = listQuery({ agent }, undefined, 51);
    t.equal((await pool.query(page.text, page.values)).rowCount, 3, `${agent}: the agent's events`);
    const read = await rowsRead(page);
    t.ok(read <= 50, `${agent}: ${read} rows read for its 3 events (of 6,003 more)`);
  }
});
