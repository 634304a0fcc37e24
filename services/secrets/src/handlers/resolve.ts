import type { Agent, SecretsService } from "@orch/contracts";
import { OrchError, invalid, notFound, precondition, type CallContext, type Handlers } from "@orch/kit";
import { sealedOf, secretRef } from "../convert.js";
import { secretsDb } from "../db/secrets.js";
import { KeyringError } from "../keyring.js";
import { decide } from "../restriction.js";
import { checkName } from "../validate.js";
import type { HandlerContext } from "../deps.js";

type ResolveHandlers = Pick<Handlers<typeof SecretsService>, "resolve">;

/** Who the secrets service is when it asks the agents service about an agent. */
const SELF = { id: "secrets", name: "secrets", type: "system", role: "" };

const refusals = {
  secret_not_found: (name: string) => notFound("secret_not_found", `no secret '${name}'`, { field: "name" }),
  agent_not_found: (_name: string, node: string) =>
    notFound("agent_not_found", `no agent '${node}'`, { field: "node_id" }),
  agent_not_approved: (_name: string, node: string) =>
    precondition("agent_not_approved", `agent '${node}' is not approved`, { field: "node_id" }),
  secret_expired: (name: string) => precondition("secret_expired", `secret '${name}' has expired`, { field: "name" }),
  secret_not_permitted: (name: string, node: string) =>
    new OrchError(
      "PERMISSION_DENIED",
      "secret_not_permitted",
      `agent '${node}' is not permitted to receive secret '${name}'`,
      { field: "node_id" },
    ),
} as const;
type Refusal = keyof typeof refusals;

export function resolveHandlers({ deps, keyring, agents }: HandlerContext): ResolveHandlers {
  const { pool, events, clock, log } = deps;

  /** The agent a node id or name refers to; undefined when there is none. */
  const agentOf = async (ref: string, ctx: CallContext): Promise<Agent | undefined> => {
    try {
      return await agents.getAgent({ id: ref }, { actor: SELF, requestId: ctx.requestId });
    } catch (err) {
      if (err instanceof OrchError && err.code === "NOT_FOUND") return undefined;
      throw err;
    }
  };

  /**
   * Records the refusal as secret.denied and returns the error to throw. Both name the agent by
   * its name (found when the refusal came before the lookup); its node id stays in metadata.
   */
  const deny = async (
    ctx: CallContext,
    reason: Refusal,
    name: string,
    ref: string,
    operationId: string,
    known?: Agent,
  ): Promise<OrchError> => {
    let agent = known;
    if (!agent && reason !== "agent_not_found") {
      try {
        agent = await agentOf(ref, ctx);
      } catch (err) {
        // The refusal stands without the name: the agents service is away.
        log.warn({ err, node_id: ref }, "agent not looked up for a secret refusal");
      }
    }
    const label = agent?.name || agent?.nodeId || ref;
    await events.tx(async (_db, emit) => {
      await emit({
        type: "secret.denied",
        summary: `secret ${name} refused for agent ${label}: ${reason}`,
        actor: ctx.actor,
        target: secretRef(name),
        metadata: {
          node_id: agent?.nodeId ?? ref,
          node_name: agent?.name ?? "",
          operation_id: operationId,
          reason,
        },
      });
    });
    return refusals[reason](name, label);
  };

  return {
    async resolve(req, ctx) {
      checkName(req.name);
      if (req.nodeId === "" || req.nodeId.length > 128)
        throw invalid("invalid_node_id", "node_id must be an agent's node id or name", { field: "node_id" });
      const row = await secretsDb.sealed(pool, req.name);
      if (!row) throw await deny(ctx, "secret_not_found", req.name, req.nodeId, req.operationId);
      if (row.expires_at !== null && Number(row.expires_at) <= clock.now())
        throw await deny(ctx, "secret_expired", row.name, req.nodeId, req.operationId);

      const agent = await agentOf(req.nodeId, ctx);
      if (!agent) throw await deny(ctx, "agent_not_found", row.name, req.nodeId, req.operationId);
      const decision = decide(row.restriction, { nodeId: agent.nodeId, status: agent.status, tags: agent.tags });
      if (!decision.ok) throw await deny(ctx, decision.reason, row.name, agent.nodeId, req.operationId, agent);

      let value: string;
      try {
        value = keyring.open(row.name, sealedOf(row));
      } catch (err) {
        if (!(err instanceof KeyringError)) throw err;
        log.error({ secret: row.name, key_id: err.keyId, reason: err.reason }, "secret cannot be decrypted");
        throw err.reason === "unknown_key"
          ? precondition(
              "secret_key_unavailable",
              `secret '${row.name}' is sealed with key '${err.keyId}', which is not in the keyring`,
            )
          : new OrchError("INTERNAL", "secret_undecryptable", `secret '${row.name}' does not decrypt with its key`);
      }
      await events.tx(async (_db, emit) => {
        await emit({
          type: "secret.used",
          summary: `secret ${row.name} resolved for agent ${agent.name || agent.nodeId}`,
          actor: ctx.actor,
          target: secretRef(row.name),
          metadata: { node_id: agent.nodeId, node_name: agent.name, operation_id: req.operationId },
        });
      });
      return { name: row.name, value };
    },
  };
}
