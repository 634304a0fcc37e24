import t from "tap";
import type { Queryable } from "@orch/kit";
import type { AgentInfo } from "../src/deps.js";
import type { ModuleSource } from "../src/engine/render.js";
import { valuesFor, withValues } from "../src/values/load.js";

// The render wiring's loader (values/load.ts) against a recording stand-in for Postgres: a
// 10,000-agent fan-out costs two queries, not one per agent; version-1 modules cost none.

function recordingDb() {
  const queries: string[] = [];
  const db = {
    async query(text: string, params?: unknown[]) {
      queries.push(text);
      if (text.includes("FROM value_sets"))
        return {
          rows: [
            { name: "defaults", selector: "", priority: 0, values: { port: 80, pool: ["a"] }, lines: {} },
            { name: "prod", selector: "env=prod", priority: 10, values: { pool: ["p"] }, lines: {} },
          ],
        };
      const ids = (params?.[0] ?? []) as string[];
      return { rows: ids.includes("n7") ? [{ node_id: "n7", values: { port: 8080 }, lines: {} }] : [] };
    },
  };
  return { db: db as unknown as Queryable, queries };
}

const agent = (i: number): AgentInfo => ({
  nodeId: `n${i}`,
  name: `web-${i}`,
  status: "approved",
  connected: true,
  tags: { env: i % 2 ? "prod" : "staging" },
  attributes: {},
});
const source = (version: 1 | 2) => ({ name: "m", sha256: "x", parsed: { version } }) as unknown as ModuleSource;

t.test("10,000 agents: two queries, values merged per agent, shared where the layers are", async (t) => {
  const { db, queries } = recordingDb();
  const agents = Array.from({ length: 10_000 }, (_, i) => agent(i));
  const out = await withValues(db, agents);
  t.equal(queries.length, 2);
  t.same(out[0]!.values, { port: 80, pool: ["a"] });
  t.same(out[1]!.values, { port: 80, pool: ["p"] });
  t.same(out[7]!.values, { port: 8080, pool: ["p"] }, "the agent's own values on top");
  t.equal(out[1]!.values, out[3]!.values, "agents matching the same sets share one object");
  t.same(agents[0]!.values, undefined, "the given agents are not modified");
});

t.test("only version-2 modules read values", async (t) => {
  const { db, queries } = recordingDb();
  const agents = [agent(1)];
  t.equal(await valuesFor(db, [source(1)], agents), agents);
  t.equal(queries.length, 0);
  t.same((await valuesFor(db, [source(1), source(2)], agents))[0]!.values, { port: 80, pool: ["p"] });
});
