import t from "tap";
import { createPool, migrate, schedulePeriodic } from "@orch/kit";
import { createTestDatabase, silentLogger } from "@orch/kit/testing";

const db = await createTestDatabase();
const pools = [
  createPool({ url: db.url, schema: "jobs_test" }),
  createPool({ url: db.url, schema: "jobs_test" }),
  createPool({ url: db.url, schema: "jobs_test" }),
];
await migrate(pools[0]!, "jobs_test", null);
t.teardown(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await db.drop();
});

t.test("three replicas ticking at once run a job exactly once per period", async (t) => {
  let now = 1_000_000;
  const clock = { now: () => now };
  const runs: string[] = [];
  const replicas = pools.map((pool, i) =>
    schedulePeriodic({ pool, log: silentLogger(), clock, replica: `r${i}` }, "prune", 60_000, async () => {
      runs.push(`r${i}`);
      await new Promise((r) => setTimeout(r, 20));
    }),
  );
  t.teardown(() => {
    for (const r of replicas) r.stop();
  });
  for (let period = 0; period < 5; period++) {
    // Every replica ticks several times within the period, concurrently and one after another.
    for (let k = 0; k < 3; k++) {
      await Promise.all(replicas.map((r) => r.tick()));
      now += 10_000;
    }
    now += 30_000;
  }
  t.equal(runs.length, 5, `ran ${runs.join(",")}`);
});

t.test("a failing job is retried at the next tick, not skipped for a period", async (t) => {
  let now = 5_000_000;
  let fail = true;
  let ran = 0;
  const p = schedulePeriodic(
    { pool: pools[0]!, log: silentLogger(), clock: { now: () => now } },
    "flaky",
    60_000,
    async () => {
      if (fail) throw new Error("boom");
      ran++;
    },
  );
  t.teardown(() => p.stop());
  t.equal(await p.tick(), false);
  fail = false;
  now += 1000;
  t.equal(await p.tick(), true);
  t.equal(ran, 1);
});
