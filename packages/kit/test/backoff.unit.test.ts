import { abortableSleep, backoff, retry } from "@orch/kit";
import t from "tap";

t.test("unit: the delay grows by the factor from initialMs and stops at maxMs", async (t) => {
  const p = backoff({ initialMs: 250, maxMs: 5000 });
  t.same([0, 1, 2, 3, 4, 5, 10].map(p), [250, 500, 1000, 2000, 4000, 5000, 5000]);
  const quad = backoff({ initialMs: 100, maxMs: 10_000, factor: 4 });
  t.same([0, 1, 2, 3].map(quad), [100, 400, 1600, 6400]);
  t.equal(p(100_000), 5000, "a loop failing for days stays capped, not Infinity or NaN");
  t.equal(backoff({ initialMs: 0, maxMs: 10 })(100_000), 0);
});

t.test("unit: jitter modes use the injected random as documented", async (t) => {
  const at = (jitter: "full" | "equal" | number, r: number, attempt = 2) =>
    backoff({ initialMs: 1000, maxMs: 60_000, jitter, random: () => r })(attempt);
  // Full: [0, delay).
  t.equal(at("full", 0), 0);
  t.equal(at("full", 0.999999), 3999);
  // Equal: [delay / 2, delay].
  t.equal(at("equal", 0), 2000);
  t.equal(at("equal", 1), 4000);
  // Fractional: delay · [1 - r, 1 + r], possibly above maxMs.
  t.equal(at(0.25, 0), 3000);
  t.equal(at(0.25, 1), 5000);
  t.equal(at(0.25, 1, 20), 75_000);
});

t.test("unit: retry waits the policy's delays between failures and returns the first success", async (t) => {
  const slept: number[] = [];
  const seen: Array<[string, number, number]> = [];
  let calls = 0;
  const v = await retry(
    async (attempt) => {
      calls++;
      if (attempt < 3) throw new Error(`fail ${attempt}`);
      return "ok";
    },
    {
      policy: backoff({ initialMs: 100, maxMs: 250 }),
      onError: (err, attempt, delay) => seen.push([(err as Error).message, attempt, delay]),
      sleep: async (ms) => void slept.push(ms),
    },
  );
  t.equal(v, "ok");
  t.equal(calls, 4);
  t.same(slept, [100, 200, 250]);
  t.same(seen, [
    ["fail 0", 0, 100],
    ["fail 1", 1, 200],
    ["fail 2", 2, 250],
  ]);
});

t.test("unit: retry rethrows the last failure when attempts run out", async (t) => {
  const slept: number[] = [];
  let calls = 0;
  await t.rejects(
    retry(
      async (attempt) => {
        calls++;
        throw new Error(`fail ${attempt}`);
      },
      { attempts: 3, policy: () => 7, sleep: async (ms) => void slept.push(ms) },
    ),
    { message: "fail 2" },
  );
  t.equal(calls, 3);
  t.same(slept, [7, 7], "no wait after the last attempt");
});

t.test("unit: an error thrown by onError ends the retries with it", async (t) => {
  let calls = 0;
  await t.rejects(
    retry(
      async () => {
        calls++;
        throw Object.assign(new Error("refused"), { permanent: true });
      },
      {
        policy: () => 1,
        onError: (err) => {
          if ((err as { permanent?: boolean }).permanent) throw err;
        },
        sleep: async () => {},
      },
    ),
    { message: "refused" },
  );
  t.equal(calls, 1);
});

t.test("unit: aborting the signal ends a wait at once and never calls fn again", async (t) => {
  const ac = new AbortController();
  let calls = 0;
  // A delay no test run outlives (setTimeout's longest, about 24 days): only the abort can end it.
  const p = retry(
    async () => {
      calls++;
      throw new Error("down");
    },
    { policy: () => 2 ** 31 - 1, signal: ac.signal },
  );
  setTimeout(() => ac.abort(new Error("stopping")), 20);
  await t.rejects(p, { message: "stopping" });
  t.equal(calls, 1, "the delay was not sat out: fn was not called again");

  const aborted = AbortSignal.abort(new Error("already"));
  t.equal(await retry(async () => ++calls, { policy: () => 1, signal: aborted }), 2, "the first try is still made");
  await t.rejects(
    retry(
      async () => {
        calls++;
        throw new Error("down");
      },
      { policy: () => 1, signal: aborted },
    ),
    { message: "already" },
  );
  t.equal(calls, 3, "but a failure is not retried");
  await t.rejects(abortableSleep(10, aborted), { message: "already" });
  await abortableSleep(1);
});
