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

  /** Records the refusal as secret.denied and returns the error to throw. */
  const deny = async (
    ctx: CallContext,
    reason: Refusal,
    name: string,
    nodeId: string,
    operationId: string,
  ): Promise<OrchError> => {
    await events.tx(async (_db, emit) => {
      await emit({
        type: "secret.denied",
        summary: `secret ${name} refused for agent ${nodeId}: ${reason}`,
        actor: ctx.actor,
        target: secretRef(name),
        metadata: { node_id: nodeId, operation_id: operationId, reason },
      });
    });
    return refusals[reason](name, nodeId);
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

      let agent: Agent;
      try {
        agent = await agents.getAgent({ id: req.nodeId }, { actor: SELF, requestId: ctx.requestId });
      } catch (err) {
        if (err instanceof OrchError && err.code === "NOT_FOUND")
          throw await deny(ctx, "agent_not_found", row.name, req.nodeId, req.operationId);
        throw err;
      }
      const decision = decide(row.restriction, { nodeId: agent.nodeId, status: agent.status, tags: agent.tags });
      if (!decision.ok) throw await deny(ctx, decision.reason, row.name, agent.nodeId, req.operationId);

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
          metadata: { node_id: agent.nodeId, operation_id: req.operationId },
        });
      });
      return { name: row.name, value };
    },
  };
}
