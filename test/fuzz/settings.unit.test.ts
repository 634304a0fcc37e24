import t from "tap";
import { DEFAULT_FUZZ_RUNS, fuzzFileTimeoutMs, fuzzSettings, laneRuns, replayEnv } from "./lib/settings.js";

// The fuzzers run a fixed number of seeded cases: what the environment sets, split exactly.

t.test("the cases are a number, not a time: the default, or ORCH_FUZZ_RUNS", async (t) => {
  const d = fuzzSettings(0.5, {});
  t.equal(d.total, DEFAULT_FUZZ_RUNS);
  t.equal(d.runs, Math.ceil(DEFAULT_FUZZ_RUNS / 2), "a file takes the share of the routes it covers");
  const set = fuzzSettings(0.25, { ORCH_FUZZ_RUNS: "100000", ORCH_FUZZ_SEED: "7", ORCH_FUZZ_CONCURRENCY: "3" });
  t.match(set, { total: 100_000, runs: 25_000, seed: 7, lanes: 3, shrink: false, keepGoing: false });
  t.equal(replayEnv(set), "ORCH_FUZZ_SEED=7 ORCH_FUZZ_RUNS=100000 ORCH_FUZZ_CONCURRENCY=3");
  t.same(fuzzSettings(1, {}), fuzzSettings(1, {}), "the same settings every time: a fixed seed");
});

t.test("a setting that is not a count stops the run instead of fuzzing something else", async (t) => {
  for (const [name, value] of [
    ["ORCH_FUZZ_RUNS", "0"],
    ["ORCH_FUZZ_RUNS", "lots"],
    ["ORCH_FUZZ_RUNS", "1.5"],
    ["ORCH_FUZZ_SEED", "-1"],
    ["ORCH_FUZZ_CONCURRENCY", "0"],
  ])
    t.throws(() => fuzzSettings(1, { [name!]: value }), new RegExp(`${name}=${value}`), `${name}=${value}`);
});

t.test("the lanes share the cases exactly", async (t) => {
  for (const [runs, lanes] of [
    [1, 8],
    [7, 8],
    [8, 8],
    [949, 8],
    [1000, 3],
    [5, 1],
  ] as const) {
    const shares = Array.from({ length: lanes }, (_, lane) => laneRuns(runs, lanes, lane));
    t.equal(
      shares.reduce((a, b) => a + b, 0),
      runs,
      `${runs} over ${lanes}: ${shares.join(" ")}`,
    );
    t.ok(Math.max(...shares) - Math.min(...shares) <= 1, "evenly");
  }
});

t.test("a file's guard against a hang grows with its cases and the machine's wait factor", async (t) => {
  const same = (ms: number) => ms;
  const small = fuzzFileTimeoutMs(fuzzSettings(1, {}), same);
  const large = fuzzFileTimeoutMs(fuzzSettings(1, { ORCH_FUZZ_RUNS: String(DEFAULT_FUZZ_RUNS * 50) }), same);
  t.ok(large > small, `${small} ms for the default, ${large} ms for 50 times the cases`);
  t.equal(
    fuzzFileTimeoutMs(fuzzSettings(1, {}), (ms) => ms * 3),
    small * 3,
    "scaled like every wait",
  );
});
