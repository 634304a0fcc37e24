import { createHash } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { contentHash } from "@orch/contracts";
import { precondition, type Actor } from "@orch/kit";
import { commandRunsDb } from "../db/commands.js";
import type { AgentInfo } from "../deps.js";
import type { Engine } from "../engine/index.js";
import { startResolvedRun, type CommandRunMsg } from "../commands/start.js";
import { resolveTargets, type Resolved } from "../commands/targets.js";
import { checkStart, type CommandSpec } from "../commands/validate.js";
import { agentRef, needsApproval } from "./gate.js";
import { cannotReplan, planChanged } from "./refusals.js";

const ACTION = "command.run";
/** How much of an argv a summary shows: enough to recognise it, short enough for a list. */
const LABEL_MAX = 60;

/**
 * What an approver of a command run approves (docs/approvals.md, command.run): the argv or the
 * script, how it runs, what was asked for (selector or node list) and the agents that resolved to,
 * sorted so only a different set (not a different order) changes the hash. Env values are never in
 * it: a run a policy holds may not carry any (held_run_env), so `env_keys` is always empty.
 */
export interface CommandRunContent {
  command: string[] | null;
  script: string | null;
  script_sha256?: string;
  timeout_s: number;
  batch: string | null;
  max_failures: number | null;
  selector: string | null;
  node_ids: string[] | null;
  targets: { node_id: string; name: string }[];
  env_keys: string[];
}

/** The agents a run would launch on (node-list entries that are unknown or unapproved never run). */
export const launchable = (resolved: readonly Resolved[]): AgentInfo[] =>
  resolved.flatMap((r) => (r.kind === "agent" ? [r.agent] : []));

/** The frozen content of a run and its canonical hash (the change request's content_hash). */
export function frozenCommandRun(
  spec: CommandSpec,
  resolved: readonly Resolved[],
): { content: CommandRunContent; hash: string } {
  const targets = launchable(resolved)
    .map((a) => ({ node_id: a.nodeId, name: a.name }))
    .sort((a, b) => (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : a.name < b.name ? -1 : 1));
  const content: CommandRunContent = {
    command: spec.argv,
    script: spec.script,
    ...(spec.script !== null ? { script_sha256: createHash("sha256").update(spec.script).digest("hex") } : {}),
    timeout_s: spec.timeoutS,
    batch: spec.batch || null,
    max_failures: spec.maxFailures,
    selector: spec.selector,
    node_ids: spec.nodeIds,
    targets,
    env_keys: [],
  };
  return { content, hash: contentHash(content) };
}

/**
 * The run a request's content describes, checked as a start is (the content came from this
 * service, but it crossed the bus and a database): env is empty, targets are resolved anew.
 */
export function commandSpecOf(content: Record<string, unknown> | undefined): CommandSpec {
  const c = content ?? {};
  const strings = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  return checkStart({
    selector: typeof c.selector === "string" ? c.selector : "",
    nodeIds: strings(c.node_ids),
    argv: Array.isArray(c.command) ? c.command : [],
    script: typeof c.script === "string" ? c.script : "",
    env: {},
    timeoutSeconds: typeof c.timeout_s === "number" ? c.timeout_s : Number.NaN,
    batch: typeof c.batch === "string" ? c.batch : "",
    maxFailures: typeof c.max_failures === "number" ? c.max_failures : undefined,
  });
}

/** The request's target name and summary: the command's first word (or "script") and what it does where. */
export function describeRun(spec: CommandSpec, agents: number): { targetName: string; summary: string } {
  const on = `on ${agents} agent${agents === 1 ? "" : "s"}`;
  if (spec.argv === null) return { targetName: "script", summary: `run a script ${on}` };
  const line = spec.argv.join(" ");
  const label = line.length > LABEL_MAX ? `${line.slice(0, LABEL_MAX - 1)}…` : line;
  return { targetName: (spec.argv[0] ?? "").slice(0, 256), summary: `run \`${label}\` ${on}` };
}

export interface CommandRunGateInput {
  spec: CommandSpec;
  resolved: readonly Resolved[];
  actor: Actor;
  reason: string;
  breakGlass: boolean;
}

/** What a start may do: run now, or answer the change request it became (`held`, the API's 202). */
export type CommandRunGate = { kind: "run" } | { kind: "held"; answer: CommandRunMsg };

/**
 * A run an approval policy naming command.run covers (on at least one of its agents) does not run:
 * it becomes a change request frozen on the command and the resolved agents. Nothing is recorded
 * as a run. A held run with env is refused before anything is submitted, since env values are
 * never stored and could not reach the later execution. An admin may break glass with a reason.
 */
export async function gateCommandRun(engine: Engine, g: CommandRunGateInput): Promise<CommandRunGate> {
  const { spec, actor } = g;
  const agents = launchable(g.resolved);
  // Nothing would run: nothing to hold.
  if (agents.length === 0) return { kind: "run" };
  const { targetName, summary } = describeRun(spec, agents.length);
  const verdict = await needsApproval(engine, {
    action: ACTION,
    agents,
    actor,
    reason: g.reason,
    breakGlass: g.breakGlass,
    target: { id: targetName, name: targetName, type: "run" },
    doing: summary.replace(/^run/, "ran"),
  });
  if (verdict.kind === "run") return verdict;
  if (Object.keys(spec.env).length > 0)
    throw precondition(
      "held_run_env",
      "an approval policy holds this run, and env values are never stored, so a held run cannot carry them: drop env, or have an admin run it now with break_glass and a reason",
      { field: "env" },
    );
  const frozen = frozenCommandRun(spec, g.resolved);
  const cr = await engine.clients.approvals.submitChangeRequest(
    {
      action: ACTION,
      targetType: "run",
      targetName,
      summary,
      reason: verdict.reason,
      content: frozen.content as unknown as JsonObject,
      contentHash: frozen.hash,
      agents: agents.map(agentRef),
    },
    { actor },
  );
  return { kind: "held", answer: heldAnswer(spec, frozen.content, cr.id, summary) };
}

/** The held start as a CommandRun message: no id (no run exists), status "held", the request and its targets. */
function heldAnswer(spec: CommandSpec, content: CommandRunContent, changeRequestId: string, summary: string) {
  return {
    id: "",
    status: "held",
    selector: spec.selector ?? "",
    nodeIds: spec.nodeIds ?? [],
    argv: spec.argv ?? [],
    script: spec.script ?? "",
    timeoutSeconds: spec.timeoutS,
    batch: spec.batch,
    ...(spec.maxFailures !== null ? { maxFailures: spec.maxFailures } : {}),
    total: content.targets.length,
    targets: content.targets.map((t) => ({ nodeId: t.node_id, name: t.name })),
    changeRequestId,
    heldSummary: summary,
  } satisfies CommandRunMsg;
}

/**
 * Carries out an approved command run, once, as the requester as they are now: the targets are
 * resolved again and the run frozen again; a different hash (an agent added to or gone from the
 * selector, a name approved or removed, the requester's scope narrowed) refuses with plan_changed.
 * A retried call answers the run it began. The run starts without env (a held run never has any).
 */
export async function executeCommandRun(
  engine: Engine,
  req: { id: string; contentHash: string; approvers: string[]; content?: Record<string, unknown> | undefined },
  actor: Actor,
): Promise<string> {
  const { pool } = engine.deps;
  const done = await commandRunsDb.byChangeRequest(pool, req.id);
  if (done) return done.id;
  const spec = commandSpecOf(req.content);
  const resolved = await resolveTargets(engine.clients, spec, actor);
  if (frozenCommandRun(spec, resolved).hash !== req.contentHash)
    throw planChanged("the command or the agents it runs on differ");
  try {
    const approval = { changeRequestId: req.id, approvers: [...req.approvers] };
    return (await startResolvedRun(engine, { spec, resolved, actor, approval })).id ?? "";
  } catch (err) {
    // Two replicas executing the same request: the unique index lets one start; the other answers it.
    const again = await commandRunsDb.byChangeRequest(pool, req.id);
    if (again) return again.id;
    throw err;
  }
}

/**
 * Freezes a pending run's request again as it would run now (as the requester): its targets resolved
 * anew, so an agent that joined or left the selector is in the new content the approvers decide on.
 * A run that would reach no agent now cannot be re-planned.
 */
export async function replanCommandRun(
  engine: Engine,
  req: { content?: Record<string, unknown> | undefined },
  actor: Actor,
): Promise<{ content: JsonObject; contentHash: string; summary: string }> {
  const spec = commandSpecOf(req.content);
  const resolved = await resolveTargets(engine.clients, spec, actor);
  const agents = launchable(resolved);
  if (agents.length === 0) throw cannotReplan("it would run on no agent now");
  const frozen = frozenCommandRun(spec, resolved);
  return {
    content: frozen.content as unknown as JsonObject,
    contentHash: frozen.hash,
    summary: describeRun(spec, agents.length).summary,
  };
}
