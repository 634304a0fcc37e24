/**
 * The system under soak and its load: the fault suite's stack and mixed load (one place for the
 * load), on a private nats-server and a fresh database.
 */
import { createTestDatabase, startNats } from "@orch/kit/testing";
import { startFaultStack } from "../../test/faults/lib/stack.js";
import { startMixedLoad } from "../../test/faults/lib/load.js";
import type { LoadKind, LoadReport } from "../../test/faults/lib/types.js";

export interface SoakLoad {
  /** Stops the load and returns what it did; the stack keeps running. */
  stopLoad(): Promise<LoadReport>;
  /** Stops the load if still running, the stack, the database and NATS. */
  stop(): Promise<void>;
}

export async function startSoakLoad(opts: { agents: number }): Promise<SoakLoad> {
  const nats = await startNats();
  const db = await createTestDatabase("orch_soak");
  const stack = await startFaultStack({
    name: "soak",
    // The handle, not only its URL: each service connects as its own bus user.
    nats,
    db: { url: db.url },
    agents: opts.agents,
  });
  const load = startMixedLoad(stack);
  let report: Promise<LoadReport> | undefined;
  const stopLoad = () => (report ??= load.stop());
  return {
    stopLoad,
    async stop() {
      await stopLoad().catch(() => {});
      await stack.stop();
      await db.drop();
      await nats.stop();
    },
  };
}

export interface LoadFigures {
  seconds: number;
  requests: number;
  perSecond: number;
  /** Per kind: requests, 2xx, 4xx, 5xx, no response. */
  byKind: Record<
    string,
    { requests: number; ok: number; clientErrors: number; serverErrors: number; noResponse: number; p99Ms: number }
  >;
  acked: number;
  operations: number;
  terminal: LoadReport["terminal"];
}

export function summariseLoad(r: LoadReport, seconds: number): { text: string; figures: LoadFigures } {
  const byKind: LoadFigures["byKind"] = {};
  const kinds = [...new Set(r.requests.map((q) => q.kind))].sort() as LoadKind[];
  for (const kind of kinds) {
    const reqs = r.requests.filter((q) => q.kind === kind);
    const ms = reqs.map((q) => q.ms).sort((a, b) => a - b);
    byKind[kind] = {
      requests: reqs.length,
      ok: reqs.filter((q) => q.status >= 200 && q.status < 300).length,
      clientErrors: reqs.filter((q) => q.status >= 400 && q.status < 500).length,
      serverErrors: reqs.filter((q) => q.status >= 500).length,
      noResponse: reqs.filter((q) => q.status === 0).length,
      p99Ms: ms[Math.max(0, Math.ceil(ms.length * 0.99) - 1)] ?? Number.NaN,
    };
  }
  const figures: LoadFigures = {
    seconds: Math.round(seconds),
    requests: r.requests.length,
    perSecond: r.requests.length / seconds,
    byKind,
    acked: r.acked.length,
    operations: r.operations.length,
    terminal: r.terminal,
  };
  const lines = Object.entries(byKind).map(
    ([k, f]) =>
      `  ${k.padEnd(9)} ${String(f.requests).padStart(7)} requests  2xx ${f.ok}  4xx ${f.clientErrors}  5xx ${f.serverErrors}  no response ${f.noResponse}  p99 ${f.p99Ms.toFixed(0)} ms`,
  );
  const text = [
    `load: ${figures.requests} requests in ${figures.seconds} s (${figures.perSecond.toFixed(1)}/s), ${figures.acked} acknowledged writes, ${figures.operations} applies, terminal ${r.terminal.echoes} echoes / ${r.terminal.failures} failures / ${r.terminal.reopened} reopened`,
    ...lines,
  ].join("\n");
  return { text, figures };
}
