import t from "tap";
import { OrchError } from "@orch/kit";
import { silentLogger } from "@orch/kit/testing";
import { databaseAway, untilStored } from "../src/engine/db-retry.js";

const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

t.test("a write is retried while Postgres refuses connections, then stored once", async (t) => {
  let calls = 0;
  const out = await untilStored(silentLogger(), "test", async () => {
    if (++calls < 3) throw refused();
    return "stored";
  });
  t.equal(out, "stored");
  t.equal(calls, 3);
});

t.test("an error waiting cannot cure is thrown at once", async (t) => {
  let calls = 0;
  const bad = Object.assign(new Error("duplicate key"), { code: "23505" });
  await t.rejects(
    untilStored(silentLogger(), "test", async () => {
      calls++;
      throw bad;
    }),
    bad,
  );
  t.equal(calls, 1);
});

t.test("only raw database failures count as the database being away", async (t) => {
  t.ok(databaseAway(refused()));
  t.ok(databaseAway(new Error("Connection terminated unexpectedly")));
  t.notOk(databaseAway(new OrchError("UNAVAILABLE", "agent_not_connected", "agent gone")));
  t.notOk(databaseAway(Object.assign(new Error("syntax"), { code: "42601" })));
});
