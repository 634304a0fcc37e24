import { matchSelector, parseSelector } from "@orch/contracts";
import { invalid, MAX_PAGE_LIMIT, type Actor, type EventInput } from "@orch/kit";
import type { AssignmentRow } from "../db/catalog.js";
import { FAILED_STATUSES, operationsDb, type NewOperation, type OperationRow } from "../db/operations.js";
import { runsDb, type RunRow, type RunStatus, type RunTargetRow } from "../db/runs.js";
import { agentInfo } from "../convert.js";
import type { AgentInfo, Clients, StateDeps } from "../deps.js";
import { untilStored } from "./db-retry.js";
import { HEARTBEAT_MS } from "./heartbeat.js";
import { readAllByNodeId } from "./key-ranges.js";
import type { Limiter } from "./limit.js";
import type { ProgressPublisher } from "./progress.js";
import type { ModuleSource } from "./render.js";
import type { Runner } from "./operation.js";
import { valuesFor } from "../values/load.js";

/** Agents per batch: "" = all at once, "N" = N agents, "P%" = P percent of the matched agents (at least 1). */
export function batchSize(spec: string, total: number): number {
  const all = Math.max(1, total);
  if (spec === "") return all;
  let m = /^([1-9]\d{0,6})$/.exec(spec);
  if (m) return Math.min(Number(m[1]), all);
  m = /^([1-9]\d?|100)%$/.exec(spec);
  if (m) return Math.min(all, Math.max(1, Math.ceil((Number(m[1]) / 100) * total)));
  throw invalid("invalid_batch", `batch must be a positive integer or a percentage such as "25%", got '${spec}'`, {
    field: "batch",
  });
}

/** Every approved agent, in node id order (large registries are read in key ranges at once: key-ranges.ts). */
export async function approvedAgents(clients: Clients, actor: Actor): Promise<AgentInfo[]> {
  const agents = await readAllByNodeId(
    async (cursor) => {
      const r = await clients.agents.listAgents({ limit: MAX_PAGE_LIMIT, cursor, status: "approved" }, { actor });
      return { items: r.agents, nextCursor: r.nextCursor };
    },
    (a) => a.nodeId,
  );
  return agents.filter((a) => a.status === "approved").map(agentInfo);
}

export function matchAgents(selector: string, agents: readonly AgentInfo[]): AgentInfo[] {
  const sel = parseSelector(selector);
  return agents
    .filter((a) => matchSelector(sel, { node_id: a.nodeId, name: a.name, tags: a.tags, attributes: a.attributes }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.nodeId < b.nodeId ? -1 : 1));
}

export interface RunInput {
  assignment: AssignmentRow;
  kind: "apply" | "plan";
  batch: string;
  maxFailures: number | null;
  actor: Actor;
  sources: ModuleSource[];
  agents: AgentInfo[];
  /** The git source (and commit) whose sync or plan starts this run. */
  origin?: { source: string; commit: string };
  /** The approved change request this apply carries out, and who approved it. */
  approval?: { changeRequestId: string; approvers: string[] };
}

export interface FanOut {
  /** Records the run and its first batch, then drives the rest in the background. */
  start(input: RunInput): Promise<{ run: RunRow; done: Promise<void> }>;
  waitFor(id: string, ms: number): Promise<void>;
  drain(): Promise<void>;
}

/** The run's row: the matched agents split into batches, in their given order. */
export function planFanOut(input: RunInput, id: string, now: number): RunRow {
  const matched = input.agents;
  const size = batchSize(input.batch, matched.length);
  const targets: RunTargetRow[] = matched.map((a, i) => ({
    node_id: a.nodeId,
    name: a.name,
    batch: Math.floor(i / size) + 1,
  }));
  return {
    id,
    assignment: input.assignment.name,
    kind: input.kind,
    status: matched.length ? "running" : "completed",
    selector: input.assignment.selector,
    modules: input.assignment.modules,
    batch_size: matched.length ? size : 0,
    batches: matched.length ? Math.ceil(matched.length / size) : 0,
    max_failures: input.maxFailures,
    failures: 0,
    targets,
    actor_id: input.actor.id,
    actor_name: input.actor.name,
    created_at: now,
    updated_at: now,
    finished_at: matched.length ? null : now,
    source: input.origin?.source ?? "",
    source_commit: input.origin?.commit ?? "",
    change_request_id: input.approval?.changeRequestId ?? null,
  };
}

/** The assignment.applied event of a fan-out that starts. */
function fanOutStarted(run: RunRow, input: RunInput): EventInput {
  const n = input.agents.length;
  return {
    type: "assignment.applied",
    summary: `${input.kind} of assignment ${run.assignment} started on ${n} agent${n === 1 ? "" : "s"} by ${input.actor.name}`,
    actor: input.actor,
    target: { id: run.assignment, name: run.assignment, type: "assignment" },
    metadata: {
      run_id: run.id,
      kind: run.kind,
      selector: run.selector,
      modules: run.modules,
      agents: n,
      batch_size: run.batch_size,
      batches: run.batches,
      max_failures: run.max_failures,
      ...(input.origin ? { source: input.origin.source, commit: input.origin.commit } : {}),
      ...(input.approval
        ? { change_request_id: input.approval.changeRequestId, approved_by: input.approval.approvers }
        : {}),
    },
  };
}

interface DriveParts {
  deps: StateDeps;
  runner: Runner;
  limiter: Limiter;
  progress: ProgressPublisher;
}

/** Runs a recorded fan-out's batches (the first one's operations inserted already) and ends it. */
async function driveFanOut(p: DriveParts, run: RunRow, input: RunInput, first: NewOperation[]): Promise<void> {
  const { deps, runner, limiter, progress } = p;
  const { pool, clock, log } = deps;
  const byNode = new Map(input.agents.map((a) => [a.nodeId, a]));
  const opInput = (agent: AgentInfo) => ({
    agent,
    kind: input.kind,
    sources: input.sources,
    actor: input.actor,
    runId: run.id,
    assignment: run.assignment,
    onChange: () => progress.changed(run.id),
  });
  let failures = 0;
  let status: RunStatus = "completed";
  const beat = setInterval(() => void runsDb.touch(pool, run.id, clock.now()).catch(() => {}), HEARTBEAT_MS);
  beat.unref();
  try {
    for (let b = 1; b <= run.batches; b++) {
      let ops = first;
      if (b > 1) {
        ops = run.targets.filter((t) => t.batch === b).map((t) => runner.newOperation(opInput(byNode.get(t.node_id)!)));
        await operationsDb.insertMany(pool, ops);
      }
      const ended = await Promise.all(
        ops.map((op) => limiter.run(() => runner.execute(op, opInput(byNode.get(op.node_id)!)))),
      );
      failures += ended.filter((r: OperationRow | undefined) => !r || FAILED_STATUSES.includes(r.status)).length;
      await untilStored(log, "fan-out heartbeat", () => runsDb.touch(pool, run.id, clock.now(), failures));
      if (run.max_failures !== null && failures > run.max_failures && b < run.batches) {
        status = "stopped";
        log.info(
          { run: run.id, failures, max_failures: run.max_failures, batch: b },
          "fan-out stopped: too many failures",
        );
        break;
      }
    }
  } catch (err) {
    log.error({ err, run: run.id }, "fan-out failed");
    status = "interrupted";
  } finally {
    clearInterval(beat);
    const endedAt = clock.now();
    await untilStored(log, "fan-out end", () => runsDb.end(pool, run.id, status, endedAt, failures)).catch((err) =>
      log.error({ err, run: run.id }, "cannot end fan-out"),
    );
    progress.changed(run.id);
  }
}

/**
 * Assignment fan-out: the matched agents are split into batches; each batch runs through the
 * shared concurrency limiter, and once failures exceed max_failures no further batch starts.
 */
export function createFanOut(deps: StateDeps, runner: Runner, limiter: Limiter, progress: ProgressPublisher): FanOut {
  const { clock, ids, events } = deps;
  const parts: DriveParts = { deps, runner, limiter, progress };
  const inflight = new Map<string, Promise<void>>();

  return {
    async start(given) {
      // Values are read once for the whole fan-out (two queries), not per agent.
      const input = { ...given, agents: await valuesFor(deps.pool, given.sources, given.agents) };
      const matched = input.agents;
      const run = planFanOut(input, ids.next(), clock.now());
      const first = matched
        .filter((_, i) => run.targets[i]!.batch === 1)
        .map((agent) =>
          runner.newOperation({
            agent,
            kind: input.kind,
            sources: input.sources,
            actor: input.actor,
            runId: run.id,
            assignment: run.assignment,
          }),
        );
      await events.tx(async (db, emit) => {
        await runsDb.insert(db, run);
        await operationsDb.insertMany(db, first);
        await emit(fanOutStarted(run, input));
      });
      progress.changed(run.id);
      const done = matched.length ? driveFanOut(parts, run, input, first) : Promise.resolve();
      inflight.set(run.id, done);
      void done.finally(() => inflight.delete(run.id));
      return { run, done };
    },

    async waitFor(id, ms) {
      const p = inflight.get(id);
      if (!p || ms <= 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
      clearTimeout(timer);
    },

    async drain() {
      while (inflight.size) await Promise.allSettled([...inflight.values()]);
      await progress.idle();
    },
  };
}
