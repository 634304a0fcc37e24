/**
 * npm run bench -- soak [--minutes 10] [--seconds N] [--agents 4]
 *
 * Holds the fault suite's mixed load (operator writes, agent metrics, audit events, an apply
 * across agents, a live terminal: test/faults/lib/load.ts) on the whole system as real processes,
 * and prints every minute, for each service, each orch-agent and nats-server: RSS (VmRSS) and, for
 * the Node services, heap and event-loop delay of that minute (their /metrics). The bench process
 * itself is shown too (it generates the load) but not judged. Event-loop delay (ELD) columns are
 * monitorEventLoopDelay's figures less its 10 ms sampling interval, which every sample includes.
 *
 * Verdict: no process's RSS may grow more than 10 % between minute 2 and the final sample; runs
 * shorter than 4 minutes print "too short to judge". Exits 1 when a process grew too much, died or
 * was restarted during the run, or when the load got no successful response. --seconds replaces --minutes for quick runs (CI smoke).
 * Raw figures go to bench/results/soak-<time>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { intOptions } from "./lib/int-options.js";
import { healthPorts } from "./lib/soak-metrics.js";
import { watchedProcs } from "./lib/soak-procs.js";
import { formatSample, formatVerdict, verdict } from "./lib/soak-report.js";
import { takeSample, type Sample } from "./lib/soak-sample.js";
import { startSoakLoad, summariseLoad, type SoakLoad } from "./lib/soak-stack.js";

const opts = intOptions("soak", {
  minutes: { default: 10, min: 1, max: 24 * 60 },
  seconds: { default: 0, min: 0, max: 24 * 3600 },
  agents: { default: 4, min: 1, max: 64 },
});
const durationS = opts.seconds > 0 ? opts.seconds : opts.minutes * 60;
const RESULTS = fileURLToPath(new URL("./results/", import.meta.url));

const progress = (msg: string) => process.stderr.write(`bench soak: ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let soak: SoakLoad | undefined;
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    progress(`${sig}, stopping the stack`);
    void Promise.race([soak?.stop().catch(() => {}), sleep(20_000)]).then(() => process.exit(130));
  });
}

progress(`${durationS} s of mixed load, ${opts.agents} agents, ${cpus().length} cores`);
soak = await startSoakLoad({ agents: opts.agents });
const ports = await healthPorts(watchedProcs().flatMap((p) => (p.kind === "service" ? [p.pid] : [])));
const t0 = performance.now();
const elapsedS = () => (performance.now() - t0) / 1000;

const samples: Sample[] = [];
const record = async (final: boolean) => {
  const s = await takeSample({ atS: Math.round(elapsedS()), final, healthPorts: ports });
  samples.push(s);
  console.log(
    `${formatSample(
      s,
      samples.find((b) => !b.final && b.minute === 2),
    )}\n`,
  );
};

await record(false);
// Sample on each minute boundary from the load's start; the last one is the final sample.
for (let minute = 1; minute * 60 <= durationS; minute++) {
  await sleep(Math.max(0, minute * 60_000 - elapsedS() * 1000));
  await record(minute * 60 === durationS);
}
if (durationS % 60 !== 0) {
  await sleep(Math.max(0, durationS * 1000 - elapsedS() * 1000));
  await record(true);
}

const report = await soak.stopLoad();
const load = summariseLoad(report, elapsedS());
console.log(load.text);
const v = verdict(samples, durationS);
// A soak whose load did nothing would pass on idle processes.
if (!Object.values(load.figures.byKind).some((k) => k.ok > 0)) v.failures.push("the load got no successful response");
console.log(formatVerdict(v, durationS));

mkdirSync(RESULTS, { recursive: true });
const file = `${RESULTS}soak-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(
  file,
  `${JSON.stringify({ options: { ...opts, durationS }, samples, load: load.figures, verdict: v }, null, 2)}\n`,
);
console.log(`raw figures: ${file}`);

await soak.stop();
process.exit(v.failures.length ? 1 : 0);
