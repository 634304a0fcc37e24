/**
 * How CI runs each bench once at a tiny size (test/bench/<name>-smoke.test.ts), so a bench that no
 * longer starts, crashes or stops printing its figures fails `npm test`. Figures are matched by
 * shape only, never by value: no bench becomes a timed test. soak has its own smoke test
 * (soak-smoke.test.ts) that also reads its raw figures, so it is not listed here.
 */
export interface SmokeEntry {
  /** Arguments after `npm run bench -- <name>`: the smallest run that still exercises every phase. */
  args: string[];
  /** Lines the bench prints when it measured something (besides a load average, asked of every bench). */
  figures: RegExp[];
  /**
   * Past this long (× the suite's wait factor) the run is taken for hung, stopped and failed: a
   * guard, not a figure, so generous, as CI machines are slow and busy.
   */
  limitS: number;
}

export const SMOKE: Record<string, SmokeEntry> = {
  agents: {
    args: ["--counts", "50", "--steady", "2", "--window", "2", "--pings", "50"],
    // The summary row of N=50 with every one of its 16 columns a number ("-" marks a figure not taken).
    figures: [/^summary /m, /^\s*50(\s+[\d.]+){15}$/m],
    limitS: 240,
  },
  runs: {
    args: ["--agents", "50", "--rounds", "1"],
    figures: [/^1\s+[\d.]+\s+\d+\s+\d+\s+50\s.*\s50 succeeded$/m, /^goal: 50 agents, all results in < 5 s → best/m],
    limitS: 240,
  },
  console: {
    args: ["--agents", "50", "--screens", "2", "--plan-agents", "10", "--terminal-samples", "50"],
    figures: [
      /^ {2}total [\d.]+ KB gz of the 200 KB budget/m,
      /fleet:data → fleet:painted [\d.]+ ms/,
      /scrolling 2 screens: \d+ frames, p50 [\d.]+ ms/,
      /^ {2}median [\d.]+ ms of the 1000 ms budget/m,
      /^ {2}echo p99\s+[\d.]+ ms\s+[\d.]+ ms$/m,
    ],
    limitS: 360,
  },
  "agent-package": {
    args: [],
    figures: [
      /^build: [\d.]+ s/m,
      /\.deb\s+[\d.]+ MB\s+goal ≤ 60 MB: (met|NOT met)$/m,
      /\.tar\.gz\s+[\d.]+ MB\s+goal ≤ 60 MB: (met|NOT met)$/m,
      /^cold start \(spawn → Welcome, bundled node\): \d+ ms/m,
    ],
    // Builds and compresses two packages (and downloads the Node runtime once into its cache).
    limitS: 480,
  },
  fanout: {
    args: ["--agents", "50"],
    figures: [/^goal: 50 agents applied in < [\d.]+ s → [\d.]+ s/m],
    limitS: 240,
  },
  audit: {
    args: ["--events", "1000", "--samples", "20", "--ingest-seconds", "3", "--rate", "1000", "--rate-seconds", "3"],
    figures: [
      /^fixed rate 1000\/s for 3 s: [\d,]+ events published/m,
      /^flat out for 3 s: [\d,]+ events published/m,
      /end to end: \d+ events\/s sustained/,
      /^goal: every query shape p99 < 50 ms at 1,000 events: worst [\d.]+ ms/m,
    ],
    limitS: 240,
  },
  "audit-decode": {
    args: ["--events", "500", "--rounds", "2"],
    figures: [/^audit decode, 500 events: median \d+ events\/s, best \d+ events\/s/m],
    limitS: 120,
  },
  blobs: {
    args: ["--mib", "8", "--agents", "2"],
    figures: [
      /^upload \(PUT, streamed\)\s+[\d.]+ s\s+[\d.]+ MiB\/s/m,
      /^first apply\s+[\d.]+ s\s+16\.0 MiB sent/m,
      /^apply again \(no change\)\s+[\d.]+ s\s+0\.0 MiB sent/m,
      /^peak RSS gateway\s+\d+ MiB .*CPU [\d.]+ s$/m,
      /^goal: .*: (met|NOT met)$/m,
    ],
    limitS: 240,
  },
  terminal: {
    args: ["--samples", "50", "--mib", "2", "--rounds", "1", "--idle", "1"],
    figures: [/^echo p99\s+[\d.]+ ms\s+[\d.]+ ms/m, /^cat throughput \(median\)\s+[\d.]+ MiB\/s\s+[\d.]+ MiB\/s/m],
    limitS: 240,
  },
  gateway: {
    args: ["--duration", "2"],
    figures: [/ in \d+ consecutive runs: (met|NOT met)/],
    limitS: 300,
  },
  peers: {
    args: ["--hosts", "2"],
    figures: [/^N=2 orch /m],
    // Runs Ansible and Puppet too, each a process per host and phase: the slowest smoke run.
    limitS: 600,
  },
};
