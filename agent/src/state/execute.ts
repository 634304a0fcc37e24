import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import {
  CONTENT_PATH_FIELDS,
  SECRET_PATH_FIELDS,
  sealDiff,
  sealObserved,
  type ExecuteRequest,
  type ExecuteResponseSchema,
} from "@orch/contracts";
import { SpanStatusCode, withSpan } from "@orch/kit/tracing";
import { agentMetrics } from "../prometheus.js";
import { AgentError, type AgentCallContext, type AgentLogger } from "../runtime.js";
import { masker, maskJson, mentionsAny } from "./mask.js";
import { loadSealedPaths, type SealedPaths } from "./sealed-paths.js";
import { topoOrder } from "./order.js";
import { decide, type Status, type TriggerNode } from "./triggers.js";
import {
  SpecError,
  UnsupportedError,
  type ApplyResult,
  type CheckResult,
  type Provider,
  type ProviderContext,
} from "./types.js";

export type { Status };
/** A ResourceResult as built here (fields named as in the generated message). */
interface Result {
  id: string;
  module: string;
  type: string;
  status: Status;
  changed: boolean;
  diff?: string;
  message?: string;
  stdout?: string;
  stderr?: string;
  durationMs?: number;
  observed?: JsonObject;
}
type Response = MessageInitShape<typeof ExecuteResponseSchema>;

export interface ExecuteDeps {
  providers: Record<string, Provider>;
  log: AgentLogger;
  /** Progress sink (`rt.publish`); progress is best effort and never fails the operation. */
  publish?: (subject: string, data: Uint8Array) => void;
  /** Paths written from a secret (persisted by the feature); in memory only when absent. */
  sealed?: SealedPaths;
}

export const progressSubject = (operationId: string) => `orch.state.progress.${operationId}`;

/** Time kept back from the caller's deadline so the reply still reaches it: a tenth, 100 ms..2 s. */
const replyMargin = (budgetMs: number) => Math.min(2000, Math.max(100, budgetMs / 10));

const keyOf = (module: string, id: string) => `${module}/${id}`;

/**
 * The Execute handler: orders the resources by `requires` (and `onchanges`/`triggered_by`), checks
 * (plan) or enforces (apply) each, skips the dependents of anything that did not succeed, runs an
 * `onchanges` resource only after a change, refreshes a triggered service once (triggers.ts), and
 * masks secrets in everything returned.
 * Executions on one agent run one at a time: a drift check during an apply would otherwise
 * observe a half-applied machine.
 */
export function createExecute(deps: ExecuteDeps): (req: ExecuteRequest, ctx: AgentCallContext) => Promise<Response> {
  let queue: Promise<unknown> = Promise.resolve();
  const sealed = deps.sealed ? Promise.resolve(deps.sealed) : loadSealedPaths({ onSaveError: () => {} });
  return (req, ctx) => {
    const run = queue.then(async () => executeOne(deps, await sealed, req, ctx));
    queue = run.catch(() => {});
    return run;
  };
}

async function executeOne(
  deps: ExecuteDeps,
  sealed: SealedPaths,
  req: ExecuteRequest,
  ctx: AgentCallContext,
): Promise<Response> {
  if (req.mode !== "plan" && req.mode !== "apply")
    throw new AgentError("INVALID_ARGUMENT", "invalid_mode", `mode must be plan or apply`);
  const mode = req.mode;
  const nodes = req.resources.map((r, i) => {
    if (!r.id) throw new AgentError("INVALID_ARGUMENT", "invalid_resource", `resource ${i} has no id`);
    // A bare id means a resource of the same module.
    const keys = (qs: string[]) => qs.map((q) => (q.includes("/") ? q : keyOf(r.module, q)));
    return {
      key: keyOf(r.module, r.id),
      type: r.type,
      requires: keys(r.requires),
      onchanges: keys(r.onchanges),
      triggeredBy: keys(r.triggeredBy),
      res: r,
    };
  });
  const ordered = topoOrder(nodes);
  const mask = masker(req.mask);
  const until = ctx.deadline - replyMargin(ctx.deadline - Date.now());
  const statusOf = new Map<string, Status>();
  const results: Result[] = [];

  for (const node of ordered) {
    const { res } = node;
    const started = performance.now();
    const result = await settle(deps, sealed, { mode, until, mask: req.mask }, node, statusOf);
    result.durationMs = performance.now() - started;
    results.push(maskResult(result, mask));
    statusOf.set(node.key, result.status);
    agentMetrics().resource(result.status);
    if (req.operationId && deps.publish) {
      try {
        deps.publish(
          progressSubject(req.operationId),
          new TextEncoder().encode(
            JSON.stringify({ id: res.id, module: res.module, status: result.status, changed: result.changed }),
          ),
        );
      } catch (err) {
        deps.log.debug({ err: (err as Error).message }, "state progress not published");
      }
    }
  }
  const count = (s: Status) => results.filter((r) => r.status === s).length;
  deps.log.info(
    {
      operation_id: req.operationId,
      mode: req.mode,
      resources: results.length,
      changed: count("changed"),
      failed: count("failed"),
      skipped: count("skipped"),
    },
    "state execute finished",
  );
  return { results };
}

type Outcome = Omit<Result, "id" | "module" | "type">;
type ExecNode = TriggerNode & { requires: string[]; res: ExecuteRequest["resources"][number] };

/**
 * One resource's result: skipped when a requirement did not succeed or the deadline is near, not
 * run when its triggers say so (triggers.ts), otherwise checked or applied by its provider.
 */
async function settle(
  deps: ExecuteDeps,
  sealed: SealedPaths,
  op: { mode: "plan" | "apply"; until: number; mask: readonly string[] },
  node: ExecNode,
  statusOf: ReadonlyMap<string, Status>,
): Promise<Result> {
  const { res } = node;
  const base = { id: res.id, module: res.module, type: res.type };
  const blocker = node.requires.find((k) => statusOf.get(k) !== "ok" && statusOf.get(k) !== "changed");
  if (blocker)
    return {
      ...base,
      status: "skipped",
      changed: false,
      message: `skipped: requires ${blocker}, which is ${statusOf.get(blocker)}`,
    };
  if (Date.now() >= op.until)
    return {
      ...base,
      status: "skipped",
      changed: false,
      message: "skipped: the operation's deadline was reached before this resource ran",
    };
  const decision = decide(node, statusOf, op.mode);
  if (!decision.run) return { ...base, status: decision.status, changed: false, message: decision.message };
  const spec = (res.spec ?? {}) as Record<string, unknown>;
  // The server resolves secrets only for resources rendered with one, and sends every value it
  // resolved: a spec holding one of them is this resource's secret.
  const secret = mentionsAny(spec, op.mask);
  const content = pathOf(spec, CONTENT_PATH_FIELDS[res.type]);
  const seal = content !== undefined && ((secret && !fromBlob(res.type, spec)) || (await sealed.has(content)));
  const outcome = await traced(res, op.mode, () =>
    runResource(deps.providers[res.type], res.type, op.mode, spec, {
      deadline: op.until,
      secret,
      sealed: seal,
      ...(decision.refresh ? { refresh: decision.refresh } : {}),
    }),
  );
  if (decision.note) outcome.message = outcome.message ? `${outcome.message}; ${decision.note}` : decision.note;
  const result: Result = { ...base, ...(seal ? sealOutcome(outcome) : outcome) };
  await remember(sealed, res.type, spec, op.mode, secret, result.status).catch((err: Error) =>
    deps.log.warn({ err: err.message, resource: node.key }, "sealed paths not updated"),
  );
  return result;
}

/**
 * One span per resource that runs (skipped ones never reach a provider): resource.check in a plan,
 * resource.apply in an apply, with the outcome as an attribute. A pass-through when tracing is off.
 */
const traced = (res: { id: string; module: string; type: string }, mode: string, fn: () => Promise<Outcome>) =>
  withSpan(
    mode === "plan" ? "resource.check" : "resource.apply",
    { attributes: { "orch.resource.type": res.type, "orch.resource.id": res.id, "orch.resource.module": res.module } },
    async (span) => {
      const out = await fn();
      if (span) {
        span.setAttribute("orch.resource.result", out.status);
        if (out.status === "failed") span.setStatus({ code: SpanStatusCode.ERROR, message: out.message ?? "failed" });
      }
      return out;
    },
  );

/** A path field of the spec as the provider reads it (anything else is the provider's to refuse). */
function pathOf(spec: Record<string, unknown>, field: string | undefined): string | undefined {
  const v = field === undefined ? undefined : spec[field];
  return typeof v === "string" && v.startsWith("/") ? v : undefined;
}

/**
 * A file copied from a blob: its content is the blob's bytes as uploaded, never rendered, so no
 * secret resolved for the operation is in it, even when another field of the spec mentions one.
 */
const fromBlob = (type: string, spec: Record<string, unknown>) =>
  // Strict: a spec the provider refuses (both fields, `source: null`) is not taken for a blob copy.
  type === "file" && typeof spec.source === "string" && spec.content === undefined;

/** What a content type reports of a sealed file: attribute lines and sizes, no content, no hash. */
function sealOutcome(o: Outcome): Outcome {
  return {
    ...o,
    diff: sealDiff(o.diff ?? ""),
    ...(o.observed ? { observed: sealObserved(o.observed) as JsonObject } : {}),
  };
}

/**
 * Seals the paths a secret-bearing resource left holding its secret (content types' path, an
 * exec's `creates`); unseals a file a resource without secrets, or a copy of a blob, rewrote whole
 * or removed.
 */
async function remember(
  sealed: SealedPaths,
  type: string,
  spec: Record<string, unknown>,
  mode: "plan" | "apply",
  secret: boolean,
  status: Status,
): Promise<void> {
  if (status !== "ok" && status !== "changed") return;
  const path = pathOf(spec, SECRET_PATH_FIELDS[type]);
  if (path === undefined) return;
  if (secret && !fromBlob(type, spec)) await sealed.add([path]);
  else if (mode === "apply" && rewritesWhole(type, spec)) await sealed.remove([path]);
}

/** A file resource that leaves the file holding only what it says (or no file): no earlier secret. */
const rewritesWhole = (type: string, spec: Record<string, unknown>) =>
  type === "file" && (spec.content !== undefined || fromBlob(type, spec) || spec.state === "absent");

async function runResource(
  provider: Provider | undefined,
  type: string,
  mode: "plan" | "apply",
  spec: Record<string, unknown>,
  ctx: ProviderContext,
): Promise<Outcome> {
  if (!provider)
    return { status: "unsupported", changed: false, message: `resource type "${type}" is not supported by this agent` };
  try {
    if (mode === "plan") {
      const c: CheckResult = await provider.check(spec, ctx);
      return {
        status: c.changed ? "changed" : "ok",
        changed: c.changed,
        diff: c.diff,
        message: c.message ?? "",
        observed: json(c.observed),
      };
    }
    const a: ApplyResult = await provider.apply(spec, ctx);
    return {
      status: a.failed ? "failed" : a.changed ? "changed" : "ok",
      changed: a.changed,
      diff: a.diff,
      message: a.message,
      stdout: a.stdout,
      stderr: a.stderr,
      observed: json(a.observed),
    };
  } catch (err) {
    if (err instanceof UnsupportedError) return { status: "unsupported", changed: false, message: err.message };
    if (err instanceof SpecError) return { status: "failed", changed: false, message: err.message };
    return {
      status: "failed",
      changed: false,
      message: `${mode === "plan" ? "check" : "apply"} failed: ${(err as Error).message ?? String(err)}`,
    };
  }
}

/** Struct values must be JSON: drops undefined and turns anything exotic into its JSON form. */
const json = (o: Record<string, unknown>) => JSON.parse(JSON.stringify(o)) as JsonObject;

function maskResult(r: Result, mask: (s: string) => string): Result {
  return {
    ...r,
    diff: mask(r.diff ?? ""),
    message: mask(r.message ?? ""),
    stdout: mask(r.stdout ?? ""),
    stderr: mask(r.stderr ?? ""),
    ...(r.observed ? { observed: maskJson(r.observed, mask) as JsonObject } : {}),
  };
}
