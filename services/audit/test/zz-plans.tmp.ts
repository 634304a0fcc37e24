import pg from "pg";
import { migrate, createPool } from "@orch/kit";
import { monotonicFactory } from "ulid";
import { listQuery, tailQuery, parseFilter } from "../src/filter.js";
import { AUDIT_MIGRATIONS } from "./harness.js";
const url = process.argv[2]!;
const pool = createPool({ url, schema: "audit", max: 2, statementTimeoutMs: 600000 });
const load = process.argv[3] === "load";
if (load) {
  await migrate(pool, "audit", AUDIT_MIGRATIONS);
  const agents = Array.from({ length: 2000 }, (_, i) => ({ id: `node-${i.toString(16).padStart(6, "0")}`, name: `${["web", "db", "cache", "worker"][i % 4]}-${i}`, type: "agent" }));
  const operators = Array.from({ length: 25 }, (_, i) => ({ id: `01OPERATOR${String(i).padStart(16, "0")}`, name: `op-${i}`, type: "operator" }));
  const pick = <T,>(a: T[]) => a[Math.floor(Math.random() * a.length)]!;
  const types = ["agent.connected","agent.connected","agent.connected","agent.disconnected","agent.disconnected","state.apply.succeeded","state.plan.completed","secret.used","auth.login.succeeded","agent.tags.updated","drift.detected","terminal.session.opened","module.uploaded"];
  const next = monotonicFactory();
  const end = Date.now(), start = end - 30 * 86400000, TOTAL = 1_000_000;
  for (let done = 0; done < TOTAL; done += 20000) {
    const cols: unknown[][] = Array.from({ length: 12 }, () => []);
    for (let i = 0; i < 20000; i++) {
      const at = Math.floor(start + ((done + i) / TOTAL) * (end - start));
      const type = pick(types);
      const byOp = type.startsWith("auth") || type.startsWith("agent.tags") || type.startsWith("terminal") || type.startsWith("module");
      const a = pick(agents), o = pick(operators);
      const actor = byOp ? o : a, target = type.startsWith("auth") ? o : a;
      [next(at), at, type, "info", "s", actor.id, actor.name, actor.type, target.id, target.name, target.type, JSON.stringify({ i })].forEach((v, k) => cols[k]!.push(v));
    }
    await pool.query(`INSERT INTO events (id, ts, event_type, severity, summary, actor_id, actor_name, actor_type, target_id, target_name, target_type, metadata) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::jsonb[])`, cols);
  }
  await pool.query("ANALYZE events");
  console.log("loaded");
}
const now = Date.now(), D = 86400000;
const shapes: Array<[string, any, string | undefined]> = [
  ["none", {}, undefined],
  ["agent name", { agent: "web-8" }, undefined],
  ["agent id", { agent: "node-000008" }, undefined],
  ["operator", { operator: "op-3" }, undefined],
  ["type", { eventType: "module.uploaded" }, undefined],
  ["cat1", { category: "state" }, undefined],
  ["cat2", { category: "state.apply" }, undefined],
  ["cat3", { category: "state.apply.succeeded" }, undefined],
  ["after", { after: now - 10 * D }, undefined],
  ["before", { before: now - 10 * D }, undefined],
  ["window", { after: now - 11 * D, before: now - 10 * D }, undefined],
  ["cat+window", { category: "agent", after: now - 11 * D, before: now - 10 * D }, undefined],
  ["agent+cat", { agent: "web-8", category: "state" }, undefined],
  ["agent+window", { agent: "web-8", after: now - 11 * D, before: now - 10 * D }, undefined],
  ["op+type", { operator: "op-3", eventType: "terminal.session.opened" }, undefined],
];
for (const [name, f] of shapes) {
  const q = listQuery(parseFilter(f), undefined, 51);
  const r = await pool.query("EXPLAIN (ANALYZE, BUFFERS) " + q.text, q.values);
  const lines = r.rows.map((x: any) => x["QUERY PLAN"]);
  console.log(`== ${name}: ${lines.at(-1)}`);
  if (process.argv[4] === "v") console.log(lines.join("\n"));
  else console.log("   " + lines.filter((l: string) => /Index|Seq Scan|Sort|Bitmap/.test(l)).map((l: string) => l.trim().slice(0, 110)).join("\n   "));
}
const t = tailQuery(parseFilter({ agent: "web-8" }), 999000, 501);
const r = await pool.query("EXPLAIN ANALYZE " + t.text, t.values);
console.log("== tail agent:", r.rows.at(-1)["QUERY PLAN"]);
await pool.end();
