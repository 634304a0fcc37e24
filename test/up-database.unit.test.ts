// scripts/lib/up-database.mjs: a fresh checkout does not borrow a database another checkout set up
// (its operators and secrets belong to that checkout's keys).
import t from "tap";
import { chooseDatabase, DEFAULT_DATABASE, ownDatabaseName } from "../scripts/lib/up-database.mjs";

const a = "/src/orch-a/.orch";
const b = "/src/orch-b/.orch";

t.test("unit: the first checkout on a machine uses the default database", async (t) => {
  t.same(chooseDatabase({ freshState: true, defaultTaken: false, stateDir: a }), { name: "orch", own: false });
});

t.test("unit: a fresh checkout finding the default database set up by another takes its own", async (t) => {
  const got = chooseDatabase({ freshState: true, defaultTaken: true, stateDir: b });
  t.equal(got.own, true);
  t.equal(got.name, ownDatabaseName(b));
  t.match(got.name, /^orch_[0-9a-f]{10}$/);
  t.not(ownDatabaseName(a), ownDatabaseName(b), "two clones, two databases");
  t.equal(ownDatabaseName(b), ownDatabaseName(b), "the same clone, the same database");
});

t.test("unit: a checkout that ran before keeps the database it recorded", async (t) => {
  t.same(chooseDatabase({ recorded: "orch", freshState: false, defaultTaken: true, stateDir: a }), {
    name: DEFAULT_DATABASE,
    own: false,
  });
  const own = ownDatabaseName(b);
  t.same(chooseDatabase({ recorded: own, freshState: false, defaultTaken: true, stateDir: b }), {
    name: own,
    own: true,
  });
});

t.test("unit: a checkout with its keys already made (state kept, no record) stays on the default", async (t) => {
  // Stacks started before the record existed: their keys match the default database they set up.
  t.same(chooseDatabase({ freshState: false, defaultTaken: true, stateDir: a }), { name: "orch", own: false });
});
