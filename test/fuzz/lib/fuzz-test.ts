import type { Test } from "tap";
import { startFuzzStack } from "./fuzz-stack.js";
import { fuzz, type OpenApiDoc } from "./runner.js";
import type { Route } from "./requests.js";

/** ORCH_FUZZ_RUNS is the total over every fuzz test file; each takes the share of the routes it covers. */
export const fuzzSettings = (share: number) => {
  const seed = Number(process.env.ORCH_FUZZ_SEED ?? 20_260_124);
  const total = Number(process.env.ORCH_FUZZ_RUNS ?? 20_000);
  return {
    seed,
    runs: Math.ceil(total * share),
    lanes: Number(process.env.ORCH_FUZZ_CONCURRENCY ?? 8),
    shrink: process.env.ORCH_FUZZ_SHRINK === "1",
    keepGoing: process.env.ORCH_FUZZ_KEEP_GOING === "1",
  };
};

/**
 * One fuzz test file: a fresh stack, `share` of the requests over the routes `pick` selects, then
 * the invariants that must hold afterwards (every service ready, every process alive).
 */
export async function fuzzTest(t: Test, name: string, pick: (r: Route) => boolean) {
  const stack = await startFuzzStack(name);
  t.teardown(() => stack.stop());
  const { system } = stack;
  const docRes = await system.api("GET", "/api/v1/openapi.json");
  t.equal(docRes.status, 200, "the gateway serves its OpenAPI document");
  const doc = docRes.body as OpenApiDoc;
  const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops).map((m) => ({ method: m.toUpperCase(), path, op: ops[m]! })),
  );
  const settings = fuzzSettings(routes.filter(pick).length / routes.length);

  const summary = await fuzz(
    doc,
    {
      url: system.url,
      pools: stack.pools,
      protectedIds: stack.protectedIds,
      stand_ins: {
        "DELETE /api/v1/agents/{node_id}": stack.ids.victim,
        "POST /api/v1/agents/{node_id}": stack.ids.victim,
        "DELETE /api/v1/operators/{operator_id}": "victimop",
        "PATCH /api/v1/operators/{operator_id}": "victimop",
      },
      tokens: stack.tokens,
      relogin: stack.relogin,
      logs: (id) =>
        system
          .output()
          .split("\n")
          .filter((l) => l.includes(id))
          .join("\n"),
    },
    { ...settings, routes: pick },
  );

  const statuses = [...summary.byStatus].sort(([a], [b]) => a - b).map(([s, n]) => `${s}:${n}`);
  t.comment(
    `${name}: ${summary.requests} requests in ${(summary.ms / 1000).toFixed(1)} s over ${summary.routes.length} routes (seed ${settings.seed}, ${settings.lanes} lanes); statuses ${statuses.join(" ")}`,
  );
  for (const f of summary.failures)
    t.fail(
      `lane ${f.lane}: reproduce with ORCH_FUZZ_SEED=${settings.seed} ORCH_FUZZ_RUNS=${process.env.ORCH_FUZZ_RUNS ?? 20_000} (fast-check seed ${f.seed})\n${f.report}`,
    );
  for (const v of summary.violations.slice(0, 50)) t.fail(v);
  t.equal(summary.violations.length, 0, "no violation (ORCH_FUZZ_KEEP_GOING)");
  t.equal(summary.failures.length, 0, "no 5xx, every 4xx problem+json, every 2xx as documented");
  t.ok(summary.requests >= settings.runs, `${summary.requests} ≥ ${settings.runs} requests made`);
  const missed = summary.routes.filter((r) => !summary.perRoute.get(r));
  t.same(missed, [], "every route of the group was requested");
  const slow = [...summary.msPerRoute]
    .sort(([, a], [, b]) => b - a)
    .slice(0, 8)
    .map(([r, ms]) => `${r} ${(ms / 1000).toFixed(1)} s`);
  t.comment(`slowest routes (total): ${slow.join(", ")}`);
  const reached = summary.routes.filter((r) => summary.ok2xx.get(r));
  t.comment(`routes never answered 2xx: ${summary.routes.filter((r) => !summary.ok2xx.get(r)).join(", ")}`);
  t.ok(
    reached.length >= summary.routes.length * 0.6,
    `${reached.length} of ${summary.routes.length} routes answered 2xx at least once: valid requests reach handlers`,
  );
  return { stack, summary };
}

/** After the run: GET /status all ok, and no service or agent process died. */
export async function assertStillUp(t: Test, stack: Awaited<ReturnType<typeof startFuzzStack>>) {
  const { system } = stack;
  const st = await system.api("GET", "/api/v1/status");
  t.equal(st.status, 200, "GET /status answers 200 after the run");
  t.equal(st.body?.status, "ok", `every service ready: ${JSON.stringify(st.body?.services ?? st.body)}`);
  for (const [name, p] of system.procs)
    t.ok(p.child.exitCode === null && p.child.signalCode === null, `${name} is still running`);
  // pino level 60 is fatal; Node prints the others when a process dies of an exception.
  const dead = system.output().match(/"level":60|Uncaught|UnhandledPromiseRejection/g) ?? [];
  t.same(dead, [], "no service logged a fatal or unhandled error");
}
