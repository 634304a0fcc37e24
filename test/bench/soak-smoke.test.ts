// Keeps `npm run bench -- soak` working: one tiny run on the real stack and load (services from
// their dist/, so build first), checking that every process is measured, the per-service event-loop
// delay is read, the load's figures are sane, and a short run is not judged. No figure is held to
// a threshold: how much a 15 s run gets done is the machine's business.
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import t from "tap";
import type { Sample } from "../../bench/lib/soak-sample.js";
import type { Verdict } from "../../bench/lib/soak-report.js";
import type { LoadFigures } from "../../bench/lib/soak-stack.js";
import { FAULT_SERVICES } from "../faults/lib/stack.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SECONDS = 15;

const run = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
  const child = spawn(process.execPath, ["scripts/bench.mjs", "soak", "--seconds", String(SECONDS), "--agents", "1"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  child.once("exit", (code) => resolve({ code, out, err }));
});
const file = /^raw figures: (.+\.json)$/m.exec(run.out)?.[1];
t.teardown(() => file && rmSync(file, { force: true }));

/** A count: a non-negative integer. */
const isCount = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;

t.test(`a ${SECONDS} s soak passes and says it is too short to judge`, async (t) => {
  t.equal(run.code, 0, `exit code (stderr: ${run.err.slice(-2000)})`);
  t.match(run.out, /^minute 0 \(t=0 s, load average [\d.]+ [\d.]+ [\d.]+\)$/m);
  // Taken once the run's time is up, however late a busy machine wakes the bench for it.
  const finalAt = Number(/^final \(t=(\d+) s, load average/m.exec(run.out)?.[1]);
  t.ok(finalAt >= SECONDS, `the final sample, at t=${finalAt} s, is taken after the ${SECONDS} s`);
  t.match(run.out, new RegExp(`RSS growth: too short to judge \\(${SECONDS} s; judged from 4 minutes\\)`));
});

t.test("the raw figures cover every service, the agent and nats-server", async (t) => {
  t.ok(file, "the bench names its JSON file");
  const raw = JSON.parse(readFileSync(file!, "utf8")) as { samples: Sample[]; verdict: Verdict; load: LoadFigures };
  t.equal(raw.samples.length, 2, "the first and the final sample");
  const final = raw.samples.at(-1)!;
  t.equal(final.final, true);
  const labels = final.procs.map((p) => p.label).sort();
  t.same(labels, [...FAULT_SERVICES, "agent-1", "bench", "nats"].sort());
  for (const p of final.procs) {
    t.ok(p.rssMiB > 1, `${p.label} RSS ${p.rssMiB} MiB`);
    if (p.kind === "service")
      t.ok(
        typeof p.lagP99Ms === "number" && p.lagMaxMs! >= p.lagP99Ms && p.heapUsedMiB! > 1,
        `${p.label}: event-loop delay p99 ${p.lagP99Ms} ms from /metrics`,
      );
  }
  t.equal(raw.verdict.judged, false);
  t.same(raw.verdict.failures, []);
  const { load } = raw;
  t.ok(isCount(load.requests) && isCount(load.acked) && isCount(load.operations), "the load's totals are counts");
  t.ok(load.seconds >= SECONDS, `the load ran the run's ${SECONDS} s (${load.seconds} s)`);
  for (const [kind, k] of Object.entries(load.byKind)) {
    const classes = [k.ok, k.clientErrors, k.serverErrors, k.noResponse];
    t.ok(
      classes.every(isCount) && classes.reduce((a, b) => a + b, 0) <= k.requests,
      `${kind}: ${k.requests} requests, of which ${classes.join("/")} 2xx/4xx/5xx/no response`,
    );
  }
  t.equal(
    Object.values(load.byKind).reduce((a, k) => a + k.requests, 0),
    load.requests,
    "every request is counted under its kind",
  );
});
