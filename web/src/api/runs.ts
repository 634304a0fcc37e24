/**
 * Assignment runs (plan/apply fan-outs): start one, follow it live over SSE, and read each finished
 * operation's per-resource results and captured output. Finished operations never change, so their
 * results are fetched once and kept; only the run snapshot is live.
 */
import type { AssignmentRun, AssignmentRunPage, OperationOutput, StateOperation } from "@orch/client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { openStream } from "../lib/event-stream";
import { operationFinished, runFinished } from "../lib/run-progress";
import { api, unwrap } from "./client";

export type { AssignmentRun, OperationOutput };
/** An operation with its per-resource results (diff, message, has_output). */
export type OperationDetail = StateOperation;
export type ResourceResult = OperationDetail["results"][number];

export const runKeys = {
  all: ["runs"] as const,
  run: (name: string, runId: string) => ["runs", name, runId] as const,
  recent: (name: string) => ["runs", name, "recent"] as const,
  output: (operationId: string) => ["runs", "output", operationId] as const,
};

/** Captured stdout/stderr of an operation's exec resources; fetched only when `enabled` (a disclosure opened). */
export function useOperationOutput(nodeId: string, operationId: string, enabled: boolean) {
  return useQuery({
    queryKey: runKeys.output(operationId),
    queryFn: async ({ signal }): Promise<OperationOutput> =>
      unwrap(
        await api.GET("/api/v1/agents/{node_id}/state/operations/{operation_id}/output", {
          params: { path: { node_id: nodeId, operation_id: operationId } },
          signal,
        }),
      ),
    enabled,
    staleTime: Number.POSITIVE_INFINITY,
  });
}

export type RunKind = "plan" | "apply";
export interface RunOptions {
  batch?: string | number;
  max_failures?: number;
}

/** POST /assignments/{name}/{plan|apply} → 202 with the run (its id is the page to follow). */
export function useStartRun(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async ({ kind, options }: { kind: RunKind; options: RunOptions }): Promise<AssignmentRun> => {
      const body = {
        ...(options.batch !== undefined && options.batch !== "" ? { batch: options.batch } : {}),
        ...(options.max_failures !== undefined ? { max_failures: options.max_failures } : {}),
      };
      const path = { params: { path: { name } }, body };
      return unwrap(
        kind === "plan"
          ? await api.POST("/api/v1/assignments/{name}/plan", path)
          : await api.POST("/api/v1/assignments/{name}/apply", path),
      );
    },
    onSuccess: (run) => {
      qc.setQueryData(runKeys.run(name, run.run_id), run);
      return qc.invalidateQueries({ queryKey: runKeys.recent(name) });
    },
  });
}

/**
 * The run once, for its first paint and its problem+json (a 404 says "no such run"; an EventSource
 * cannot). Never refetched: the stream carries every later change.
 */
export function useRun(name: string, runId: string) {
  return useQuery({
    queryKey: runKeys.run(name, runId),
    queryFn: async ({ signal }): Promise<AssignmentRun> =>
      unwrap(
        await api.GET("/api/v1/assignments/{name}/runs/{run_id}", {
          params: { path: { name, run_id: runId } },
          signal,
        }),
      ),
    staleTime: Number.POSITIVE_INFINITY,
    refetchOnWindowFocus: false,
  });
}

/** A run in the assignment's list: the run without its per-agent operations. */
export type RecentRun = AssignmentRunPage["runs"][number];

/** The first page is enough for the assignment page; older runs stay reachable by their URL. */
export const RECENT_RUNS = 20;

/** The assignment's most recent runs, newest first (a deleted assignment's runs still list). */
export function useRecentRuns(name: string) {
  return useQuery({
    queryKey: runKeys.recent(name),
    queryFn: async ({ signal }): Promise<AssignmentRunPage> =>
      unwrap(
        await api.GET("/api/v1/assignments/{name}/runs", {
          params: { path: { name }, query: { limit: RECENT_RUNS } },
          signal,
        }),
      ),
  });
}

/** "connecting" before the first answer, "reconnecting" while the gateway is away, "ended" when final. */
export type RunLive = "connecting" | "live" | "reconnecting" | "ended";

const probeSession = () => api.GET("/api/v1/auth/whoami");

/**
 * The run, live: the stream sends the whole run on connect and again on every change, so a
 * reconnect (a gateway restart) simply replaces what we show with the true state. Closed once the
 * run is final. `initial` (the one GET) is what shows until the first snapshot arrives; the stream
 * opens once it is there.
 */
export function useRunStream(
  name: string,
  runId: string,
  initial: AssignmentRun | undefined,
): { run: AssignmentRun | undefined; live: RunLive; detail: string | undefined } {
  const qc = useQueryClient();
  const [snapshot, setSnapshot] = useState<AssignmentRun | undefined>();
  const [status, setStatus] = useState<{ live: RunLive; detail: string | undefined }>({
    live: "connecting",
    detail: undefined,
  });
  // Opened once the GET answered: a missing run is its 404, not a stream retried forever.
  const ready = initial !== undefined;
  const initiallyFinal = ready && runFinished(initial);

  useEffect(() => {
    setSnapshot(undefined);
    if (!ready) return;
    if (initiallyFinal) {
      setStatus({ live: "ended", detail: undefined });
      return;
    }
    let ended = false;
    const stop = openStream({
      url: () => `/api/v1/assignments/${encodeURIComponent(name)}/runs/${encodeURIComponent(runId)}/stream`,
      event: "run",
      onMessage: (data) => {
        let run: AssignmentRun;
        try {
          run = JSON.parse(data) as AssignmentRun;
        } catch {
          return; // A malformed snapshot is skipped; the next one replaces it anyway.
        }
        setSnapshot(run);
        qc.setQueryData(runKeys.run(name, runId), run);
        if (runFinished(run)) {
          ended = true;
          stop();
        }
      },
      onState: (state, detail) => {
        if (state === "stopped") {
          if (ended) setStatus({ live: "ended", detail: undefined });
          return;
        }
        setStatus({
          live: state === "live" ? "live" : state === "connecting" ? "connecting" : "reconnecting",
          detail,
        });
      },
      probe: probeSession,
    });
    return stop;
  }, [name, runId, ready, initiallyFinal, qc]);

  return { run: snapshot ?? initial, ...status };
}

/** At most this many finished operations are read one by one; more are read in pages of the run. */
const ONE_BY_ONE = 8;
const RESULTS_PAGE = 100;
const RETRY_MS = 3000;

async function fetchOperation(id: string): Promise<OperationDetail> {
  return unwrap(await api.GET("/api/v1/state/operations/{operation_id}", { params: { path: { operation_id: id } } }));
}

async function fetchRunOperations(name: string, runId: string): Promise<OperationDetail[]> {
  const all: OperationDetail[] = [];
  let cursor: string | undefined;
  do {
    const page = unwrap(
      await api.GET("/api/v1/assignments/{name}/runs/{run_id}/operations", {
        params: {
          path: { name, run_id: runId },
          query: { limit: RESULTS_PAGE, ...(cursor ? { cursor } : {}) },
        },
      }),
    );
    all.push(...page.operations);
    cursor = page.has_more && page.next_cursor ? page.next_cursor : undefined;
  } while (cursor);
  return all;
}

/**
 * Per-resource results of the run's finished operations, fetched as they finish: on each snapshot
 * the newly finished ones are read (one by one when few, else the run's pages); a finished
 * operation never changes, so it is never read again. One read at a time; snapshots arriving
 * meanwhile are looked at when it ends.
 */
export function useRunResults(
  name: string,
  runId: string,
  run: AssignmentRun | undefined,
): { operations: ReadonlyMap<string, OperationDetail>; complete: boolean; error: unknown } {
  const known = useRef(new Map<string, OperationDetail>());
  const latest = useRef(run);
  latest.current = run;
  const busy = useRef(false);
  const pending = useRef(false);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const [, setVersion] = useState(0);
  const [error, setError] = useState<unknown>();
  const [recheck, setRecheck] = useState(0);

  // A different run starts empty.
  const key = `${name}\u0000${runId}`;
  const keyRef = useRef(key);
  if (keyRef.current !== key) {
    keyRef.current = key;
    known.current = new Map();
  }

  useEffect(() => () => clearTimeout(timer.current), []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `recheck` looks again after a read ended or failed.
  useEffect(() => {
    const current = latest.current;
    if (!current) return;
    if (busy.current) {
      pending.current = true;
      return;
    }
    const missing = current.operations.filter(
      (o): o is typeof o & { operation_id: string } =>
        o.operation_id !== null && operationFinished(o.status) && !known.current.has(o.operation_id),
    );
    if (missing.length === 0) return;
    busy.current = true;
    pending.current = false;
    const map = known.current;
    const read =
      missing.length <= ONE_BY_ONE
        ? Promise.all(missing.map((o) => fetchOperation(o.operation_id)))
        : fetchRunOperations(name, runId);
    const later = () => {
      clearTimeout(timer.current);
      timer.current = setTimeout(() => setRecheck((n) => n + 1), RETRY_MS);
    };
    read
      .then((ops) => {
        for (const op of ops) if (operationFinished(op.status)) map.set(op.id, op);
        setError(undefined);
        // The store may not have recorded a result the snapshot already counted: look again shortly.
        if (missing.some((o) => !map.has(o.operation_id))) later();
      })
      .catch((err: unknown) => {
        setError(err);
        later();
      })
      .finally(() => {
        busy.current = false;
        setVersion((v) => v + 1);
        if (pending.current) setRecheck((n) => n + 1);
      });
  }, [run, name, runId, recheck]);

  const operations = known.current;
  const complete =
    run !== undefined &&
    runFinished(run) &&
    run.operations.every((o) => o.operation_id === null || operations.has(o.operation_id));
  return { operations, complete, error };
}
