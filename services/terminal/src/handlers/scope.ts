import { AgentsService, type Agent } from "@orch/contracts";
import { OrchError, isScoped, rpcClient, type Actor, type NatsConnection } from "@orch/kit";

/**
 * Scoped operator access (docs/access.md) for terminals. The agents service owns the tags the
 * selector reads, so a scoped actor's agent is looked up there with the actor (and its scope);
 * unscoped actors skip the round trip: the gateway has resolved the agent already.
 */
export function scopeCheck(nc: NatsConnection) {
  const agents = rpcClient(nc, "agents", AgentsService, { timeoutMs: 3000 });
  return {
    /** The registry's agent when the actor is scoped (`missing()` if out of scope); undefined when unscoped. */
    async reachable(actor: Actor, nodeId: string, missing: () => OrchError): Promise<Agent | undefined> {
      if (!isScoped(actor)) return undefined;
      try {
        return await agents.getAgent({ id: nodeId }, { actor });
      } catch (err) {
        const e = OrchError.from(err);
        if (e.code === "NOT_FOUND") throw missing();
        throw e;
      }
    },
  };
}
