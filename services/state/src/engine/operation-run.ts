import { CONTENT_PATH_FIELDS, sealKey, type ExecuteResponse } from "@orch/contracts";
import { metric, OrchError } from "@orch/kit";
import {
  operationsDb,
  type Finish,
  type NewOperation,
  type OperationRow,
  type OperationStatus,
} from "../db/operations.js";
import { masker, TemplateError } from "../module/template.js";
import type { AgentInfo, Clients, StateDeps } from "../deps.js";
import { tooOldFor } from "./agent-features.js";
import { untilStored } from "./db-retry.js";
import type { FinishContext } from "./finish.js";
import type { EndWriter } from "./finish-batch.js";
import type { ModuleCache } from "./modules.js";
import type { OperationInput } from "./operation.js";
import type { OperationWrites } from "./operation-writes.js";
import {
  onPaths,
  renderResources,
  secretBearing,
  secretNames,
  secretPaths,
  type ModuleSource,
  type RenderedResource,
} from "./render.js";
import { storeResults } from "./results.js";
import { blobsOf, shipBlobs } from "./ship-blobs.js";
import type { ChunkReads } from "../blobs/chunk-reads.js";
import { sourcesOf } from "./snapshot-sources.js";

/** What every operation of this replica shares. */
export interface OperationContext {
  deps: StateDeps;
  clients: Clients;
  cache: ModuleCache;
  ends: EndWriter;
  writes: OperationWrites;
  /** Blob chunks read once for all the operations shipping them at the same time. */
  chunks: ChunkReads;
}

/**
 * Reasons meaning "no agents replica holds this agent's link" rather than a failure of the agent.
 * `agent_disconnected` is not one: the link dropped after the agent got the operation, which it may
 * have applied in part, so the operation fails with that reason instead of claiming it never ran.
 */
const UNREACHABLE_REASONS = new Set(["service_unavailable", "agent_not_connected", "agent_unreachable"]);

/**
 * The resources named in `only` (all when absent), without edges to the ones left out. One that
 * runs only on a change (onchanges) of resources all left out is left out too: none of them can
 * change in this operation.
 */
export function subset(resources: RenderedResource[], only?: ReadonlySet<string>): RenderedResource[] {
  if (!only) return resources;
  return resources
    .filter((r) => only.has(`${r.module}/${r.id}`) && (!r.onchanges?.length || r.onchanges.some((k) => only.has(k))))
    .map((r) => ({
      ...r,
      requires: r.requires.filter((dep) => only.has(dep)),
      ...(r.onchanges?.length ? { onchanges: r.onchanges.filter((dep) => only.has(dep)) } : {}),
      ...(r.triggeredBy?.length ? { triggeredBy: r.triggeredBy.filter((dep) => only.has(dep)) } : {}),
    }));
}

/** The sources with only the resources named in `only` (all when absent). */
function narrow(sources: ModuleSource[], only?: ReadonlySet<string>): ModuleSource[] {
  if (!only) return sources;
  return sources.map((s) => ({
    ...s,
    parsed: { ...s.parsed, resources: s.parsed.resources.filter((r) => only.has(`${s.name}/${r.id}`)) },
  }));
}

/**
 * What the modules of a fan-out say about secrets, worked out once per sources list (every
 * operation of a fan-out shares it) rather than by walking every resource's spec per operation.
 */
const secretInfo = new WeakMap<readonly ModuleSource[], { names: string[]; bearing: Set<string> }>();
function secretsOf(sources: readonly ModuleSource[]) {
  let info = secretInfo.get(sources);
  if (!info) {
    info = { names: secretNames(sources), bearing: secretBearing(sources) };
    secretInfo.set(sources, info);
  }
  return info;
}

/** How an Execute that threw ends the operation: status, error code and (unmasked) message. */
export function agentFailure(
  err: unknown,
  agent: Pick<AgentInfo, "name" | "nodeId">,
  timeoutSeconds: number,
): { status: OperationStatus; code: string; message: string; masked: boolean } {
  const e = OrchError.from(err);
  const who = agent.name || agent.nodeId;
  if (e.reason === "agent_disconnected")
    return {
      status: "failed",
      code: "agent_disconnected",
      message: `agent ${who} disconnected while the operation ran; it may have applied part of it: plan again once it is back`,
      masked: false,
    };
  if (e.code === "UNAVAILABLE" || UNREACHABLE_REASONS.has(e.reason))
    return {
      status: "unreachable",
      code: "agent_unreachable",
      message: `agent ${who} is not connected`,
      masked: false,
    };
  if (e.code === "DEADLINE_EXCEEDED")
    return {
      status: "timed_out",
      code: "operation_timed_out",
      message: `the agent did not finish within ${timeoutSeconds} s`,
      masked: false,
    };
  return { status: "failed", code: e.reason, message: e.message, masked: true };
}

/**
 * The resources whose results are stored without content: those rendered with a secret, and the
 * files, lines and blocks on a file the agent's snapshot says a secret was written to (by another
 * module, whose secret this operation did not resolve and cannot mask). A snapshot that cannot
 * be read seals every content resource: the check fails closed.
 */
async function sealedKeys(
  c: OperationContext,
  agent: AgentInfo,
  resources: readonly RenderedResource[],
  bearing: ReadonlySet<string>,
): Promise<ReadonlySet<string>> {
  // Nothing to seal without a content resource that is not sealed already: no snapshot read.
  if (!resources.some((r) => CONTENT_PATH_FIELDS[r.type] !== undefined && !bearing.has(`${r.module}/${r.id}`)))
    return bearing;
  let paths: ReadonlySet<string>;
  try {
    paths = secretPaths(await sourcesOf(c.deps, c.cache, await c.writes.snapshotOf(agent.nodeId)), agent);
  } catch (err) {
    c.deps.log.warn({ err, node_id: agent.nodeId }, "snapshot not read: every file, line and block result is sealed");
    paths = new Set(resources.flatMap((r) => (typeof r.spec?.path === "string" ? [sealKey(r.spec.path)] : [])));
  }
  const out = onPaths(resources, paths);
  for (const k of bearing) out.add(k);
  return out;
}

/** The secrets the resources read, resolved for this operation; the first refusal instead, as the operation's error. */
async function resolveSecrets(
  c: OperationContext,
  op: NewOperation,
  input: OperationInput,
  names: readonly string[],
): Promise<Map<string, string> | { code: string; message: string }> {
  const secrets = new Map<string, string>();
  for (const name of names) {
    try {
      const r = await c.clients.secrets.resolve(
        { name, nodeId: input.agent.nodeId, operationId: op.id },
        { actor: input.actor },
      );
      secrets.set(name, r.value);
    } catch (err) {
      const e = OrchError.from(err);
      return { code: e.reason, message: `secret '${name}': ${e.message}` };
    }
  }
  return secrets;
}

/** Ships the blobs an apply's files read to the agent's cache; how the operation ends if that failed. */
async function deliverBlobs(
  c: OperationContext,
  agent: AgentInfo,
  resources: readonly RenderedResource[],
  timeLeft: () => number,
): Promise<ReturnType<typeof agentFailure> | undefined> {
  const digests = blobsOf(resources);
  if (digests.length === 0) return undefined;
  try {
    const shipped = await shipBlobs(c.deps.pool, c.clients, agent.nodeId, digests, timeLeft, c.chunks);
    metric(c.deps.metrics, "orch_blob_bytes_sent_total").inc(shipped.bytes);
    if (shipped.blobs > 0)
      c.deps.log.info(
        { node_id: agent.nodeId, blobs: shipped.blobs, bytes: shipped.bytes },
        "blobs sent to the agent's cache",
      );
    return undefined;
  } catch (err) {
    const f = agentFailure(err, agent, c.deps.config.state.operation_timeout_seconds);
    return { ...f, message: `blobs not delivered to the agent: ${f.message}` };
  }
}

/**
 * Runs one inserted operation: secrets, rendering, pending → running, Execute on the agent, and
 * its end stored. Resolves undefined when another writer moved it on first (the caller re-reads it).
 */
export async function runOperation(
  c: OperationContext,
  op: NewOperation,
  input: OperationInput,
): Promise<OperationRow | undefined> {
  const { clock, log, config, pool } = c.deps;
  const { agent, sources, kind, only } = input;
  // An enforcement apply renders, and resolves the secrets of, its resources only.
  const used = narrow(sources, only);
  // The operation's end is work already done (the agent may have answered): it waits out a
  // database that is away instead of leaving the operation running until its deadline.
  const finish = (f: Finish, ctx: FinishContext) => untilStored(log, "operation end", () => c.ends.end({ op, f, ctx }));
  const end = (status: OperationRow["status"], error_code: string, error: string) =>
    finish({ status, finished_at: clock.now(), error_code, error }, { agent, sources, only });

  // Secrets first: a refused secret fails the operation before anything reaches the agent.
  const { names, bearing } = secretsOf(used);
  const secrets = await resolveSecrets(c, op, input, names);
  if (!(secrets instanceof Map)) return end("failed", secrets.code, secrets.message);
  const mask = masker(secrets.values());
  let resources: RenderedResource[];
  try {
    resources = subset(renderResources(used, agent, secrets), only);
  } catch (err) {
    if (err instanceof TemplateError) return end("failed", "template_error", mask(err.message));
    throw err;
  }
  const tooOld = tooOldFor(resources, agent);
  if (tooOld) return end("failed", "agent_too_old", tooOld);

  const startedAt = clock.now();
  const deadline = startedAt + config.state.operation_timeout_seconds * 1000;
  if (!(await c.writes.markRunning({ id: op.id, now: startedAt, deadline }))) return operationsDb.get(pool, op.id);
  input.onChange?.();
  const timeLeft = () => Math.max(1, deadline - clock.now());
  if (kind === "apply") {
    const failed = await deliverBlobs(c, agent, resources, timeLeft);
    if (failed) return end(failed.status, failed.code, failed.message);
  }
  let response: ExecuteResponse;
  try {
    response = await c.clients
      .agentState(agent.nodeId)
      .execute(
        { operationId: op.id, mode: kind === "apply" ? "apply" : "plan", resources, mask: [...secrets.values()] },
        { actor: input.actor, timeoutMs: timeLeft() },
      );
  } catch (err) {
    const f = agentFailure(err, agent, config.state.operation_timeout_seconds);
    return end(f.status, f.code, f.masked ? mask(f.message) : f.message);
  }
  const exec = storeResults(response.results, mask, await sealedKeys(c, agent, resources, bearing));
  const failed = exec.summary.failed > 0 || exec.summary.skipped > 0;
  return finish(
    {
      status: failed ? "failed" : "succeeded",
      finished_at: clock.now(),
      summary: exec.summary,
      results: exec.results,
      output: exec.output,
    },
    { agent, sources, exec, only },
  );
}
