/**
 * Runs one bench of the smoke table the way an operator does (`node scripts/bench.mjs <name> ...`,
 * services from their dist/, so build first) and checks that it exited 0, printed its figures and a
 * load average, and left nothing behind. Leftovers are found exactly even while other test files
 * run: the bench gets its own process group (what is still in it after the exit was leaked) and its
 * own Postgres role through TEST_DATABASE_URL (a database that role still owns was never dropped).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import pg from "pg";
import t from "tap";
import { waitFactor } from "@orch/kit/testing";
import { SMOKE } from "./smoke-table.js";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
/** The server createTestDatabase uses (its default when TEST_DATABASE_URL is unset). */
const BASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
/** Time a bench's processes get to exit after the bench itself did (a SIGTERM'd service draining). */
const EXIT_GRACE_MS = 15_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

interface Run {
  code: number | null;
  out: string;
  err: string;
  timedOut: boolean;
  wallS: number;
  leftoverProcs: string[];
  leftoverDbs: string[];
}

/** Live (not zombie) processes in process group `pgid`, as "pid cmdline". */
function groupMembers(pgid: number): string[] {
  const found: string[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      // After the comm field: state, ppid, pgrp (proc(5) fields 3..5).
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) !== pgid || state === "Z") continue;
      found.push(`${d} ${readFileSync(`/proc/${d}/cmdline`, "utf8").replaceAll("\0", " ").trim()}`);
    } catch {}
  }
  return found;
}

/** A login role of its own for one bench run; superuser, so the bench sees the server as it would as postgres. */
async function ownRole(): Promise<{ url: string; finish(): Promise<string[]> }> {
  const role = `orch_smoke_${process.pid}_${randomBytes(3).toString("hex")}`;
  const password = randomBytes(12).toString("hex");
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: BASE_URL });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  await admin((c) => c.query(`CREATE ROLE ${role} LOGIN SUPERUSER PASSWORD '${password}'`));
  const url = new URL(BASE_URL);
  url.username = role;
  url.password = password;
  return {
    url: url.toString(),
    /** Drops what the run left (after naming it) and the role. */
    finish: () =>
      admin(async (c) => {
        const { rows } = await c.query<{ datname: string }>(
          "SELECT datname FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE r.rolname = $1",
          [role],
        );
        for (const { datname } of rows) await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
        await c.query(`DROP ROLE IF EXISTS ${role}`);
        return rows.map((r) => r.datname);
      }),
  };
}

async function runBench(name: string, args: string[], limitS: number): Promise<Run> {
  const db = await ownRole();
  const t0 = performance.now();
  const child = spawn(process.execPath, ["scripts/bench.mjs", name, ...args], {
    cwd: ROOT,
    env: { ...process.env, TEST_DATABASE_URL: db.url },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group: whatever the bench starts stays in it unless it detaches on purpose.
    detached: true,
  });
  const pgid = child.pid!;
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pgid, signal);
    } catch {}
  };
  // If this test process is ended (tap's timeout), the bench must not outlive it.
  const onExit = () => killGroup("SIGKILL");
  process.once("exit", onExit);
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  let timedOut = false;
  const limit = setTimeout(() => {
    timedOut = true;
    killGroup("SIGTERM");
    setTimeout(() => killGroup("SIGKILL"), 10_000).unref();
  }, limitS * 1000);
  const closed = new Promise((r) => child.once("close", r));
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  clearTimeout(limit);
  // The rest of its output; a leaked process holding the pipes open must not hold this test up.
  await Promise.race([closed, sleep(5_000)]);
  child.stdout.destroy();
  child.stderr.destroy();
  const wallS = (performance.now() - t0) / 1000;

  let leftoverProcs = groupMembers(pgid);
  for (const until = Date.now() + EXIT_GRACE_MS; leftoverProcs.length && Date.now() < until; ) {
    await sleep(200);
    leftoverProcs = groupMembers(pgid);
  }
  killGroup("SIGKILL");
  process.off("exit", onExit);
  const leftoverDbs = await db.finish();
  return { code, out, err, timedOut, wallS, leftoverProcs, leftoverDbs };
}

/** The whole smoke test of bench `name` (one call per test file, so tap runs the benches as separate jobs). */
export async function smokeBench(name: string): Promise<void> {
  const entry = SMOKE[name];
  if (!entry) throw new Error(`test/bench/lib/smoke-table.ts has no entry for bench ${name}`);
  // Not a figure of the test: the point past which the bench is taken for hung and stopped, so that
  // it is cleaned up and reported here rather than killed with this process by tap. Scaled like
  // every wait of the suite, since a busy machine makes every bench slower.
  const limitS = Math.round(entry.limitS * waitFactor());
  t.setTimeout((limitS + 60) * 1000);
  const command = `npm run bench -- ${[name, ...entry.args].join(" ")}`;
  const run = await runBench(name, entry.args, limitS);
  // Raw figures the bench wrote to bench/results/: a smoke run's are no figures worth keeping.
  for (const m of run.out.matchAll(/^raw figures: (.+\.json)$/gm)) rmSync(m[1]!, { force: true });
  t.comment(`${command}: ${run.wallS.toFixed(1)} s wall (load average ${load()})`);

  t.test(`${command} runs and prints its figures`, async (t) => {
    t.equal(run.code, 0, run.timedOut ? `exit code (stopped as hung after ${limitS} s)` : "exit code");
    for (const re of entry.figures) t.match(run.out, re, `prints ${re}`);
    t.match(run.out, /load average/, "prints the load average");
    if (!t.passing()) t.comment(`stdout (tail):\n${run.out.slice(-3000)}\nstderr (tail):\n${run.err.slice(-3000)}`);
  });

  t.test(`${command} leaves no process and no database behind`, async (t) => {
    t.same(run.leftoverProcs, [], "nothing left in its process group");
    t.same(run.leftoverDbs, [], "every database it created was dropped");
  });
}
