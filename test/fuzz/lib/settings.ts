/** Cases over every fuzz test file when ORCH_FUZZ_RUNS is unset: enough to request every route in `npm test`. */
export const DEFAULT_FUZZ_RUNS = 2_000;
const DEFAULT_FUZZ_SEED = 20_260_124;
const DEFAULT_FUZZ_LANES = 8;

/** A positive integer from the environment, or `fallback`; anything else is a mistake worth stopping for. */
function intFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`${name}=${raw}: expected an integer ≥ ${min}`);
  return n;
}

/**
 * A fixed number of cases, never a time budget: ORCH_FUZZ_RUNS is the total over every fuzz test
 * file (each takes the share of the routes it covers), ORCH_FUZZ_SEED and ORCH_FUZZ_CONCURRENCY
 * (lanes) fix what is generated, so a run is reproduced by the three.
 */
export const fuzzSettings = (share: number, env: NodeJS.ProcessEnv = process.env) => {
  const total = intFromEnv(env, "ORCH_FUZZ_RUNS", DEFAULT_FUZZ_RUNS, 1);
  return {
    seed: intFromEnv(env, "ORCH_FUZZ_SEED", DEFAULT_FUZZ_SEED, 0),
    total,
    runs: Math.ceil(total * share),
    lanes: intFromEnv(env, "ORCH_FUZZ_CONCURRENCY", DEFAULT_FUZZ_LANES, 1),
    shrink: env.ORCH_FUZZ_SHRINK === "1",
    keepGoing: env.ORCH_FUZZ_KEEP_GOING === "1",
  };
};

export type FuzzSettings = ReturnType<typeof fuzzSettings>;

/** The environment that generates this run's cases again. */
export const replayEnv = (s: FuzzSettings) =>
  `ORCH_FUZZ_SEED=${s.seed} ORCH_FUZZ_RUNS=${s.total} ORCH_FUZZ_CONCURRENCY=${s.lanes}`;

/** Lane `lane`'s share of `runs` cases over `lanes` lanes: exactly `runs` in all. */
export const laneRuns = (runs: number, lanes: number, lane: number) =>
  Math.floor(runs / lanes) + (lane < runs % lanes ? 1 : 0);

/** A stack's start and seeding, and one case, on an idle machine, pessimistically. */
const START_BUDGET_MS = 120_000;
const CASE_BUDGET_MS = 100;

/**
 * How long a fuzz test file may run before tap stops it as hung: from the number of cases (at most
 * the total, whatever the file's share), scaled like every wait of the suite. A guard, not a
 * figure of the test: nothing asserts how fast the cases went.
 */
export const fuzzFileTimeoutMs = (s: FuzzSettings, scale: (ms: number) => number) =>
  scale(START_BUDGET_MS + s.total * CASE_BUDGET_MS);
