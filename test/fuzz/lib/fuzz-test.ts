import type { Test } from "tap";
import { startFuzzStack } from "./fuzz-stack.js";
import { fuzz, type OpenApiDoc } from "./runner.js";
import type { Route } from "./requests.js";
import { fuzzSettings, replayEnv } from "./settings.js";

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
  // Printed before the run: a run cut short (the file's timeout) still says how to reproduce it.
  t.comment(`${name}: ${settings.runs} cases, ${replayEnv(settings)}`);

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
  // Figures for the reader only: how many requests a run gets through is the machine's business.
  t.comment(
    `${name}: ${summary.requests} answered and ${summary.refusedByClose} over-limit bodies refused by a close, in ${(summary.ms / 1000).toFixed(1)} s over ${summary.routes.length} routes (${replayEnv(settings)}); statuses ${statuses.join(" ")}`,
  );
  for (const f of summary.failures)
    t.fail(`lane ${f.lane}: reproduce with ${replayEnv(settings)} (fast-check seed ${f.seed})\n${f.report}`);
  for (const v of summary.violations.slice(0, 50)) t.fail(v);
  t.equal(summary.violations.length, 0, "no violation (ORCH_FUZZ_KEEP_GOING)");
  t.equal(summary.failures.length, 0, "no 5xx, every 4xx problem+json, every 2xx as documented");
  // Which routes the cases name follows from ORCH_FUZZ_SEED alone (not from answers or timing).
  const missed = summary.routes.filter((r) => !summary.perRoute.get(r));
  t.same(missed, [], `every route of the group was requested (too few cases for ${replayEnv(settings)}?)`);
  const slow = [...summary.msPerRoute]
    .sort(([, a], [, b]) => b - a)
    .slice(0, 8)
    .map(([r, ms]) => `${r} ${(ms / 1000).toFixed(1)} s`);
  t.comment(`slowest routes (total): ${slow.join(", ")}`);
  const reached = summary.routes.filter((r) => summary.ok2xx.get(r));
  t.comment(
    `${reached.length} of ${summary.routes.length} routes answered 2xx at least once; never: ${summary.routes.filter((r) => !summary.ok2xx.get(r)).join(", ")}`,
  );
  // Not a share to reach: a stack that refused everything (a broken sign-in) would pass the oracle.
  t.ok(reached.length > 0, "valid requests reach handlers (some route answered 2xx)");
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
