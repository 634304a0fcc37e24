import { fromBinary } from "@bufbuild/protobuf";
import { AgentsService, AUDIT_FEED_SUBJECT, AuditFeedSchema, AuthService, type EventType } from "@orch/contracts";
import { OrchError, rpcClient, type Actor, type Clock, type Logger, type NatsConnection } from "@orch/kit";
import { createLiveSessions, type Credential, type Reach, type Revocation, type Verdict } from "./live-sessions.js";

/** The events after which an agent may be out of an operator's reach (the name never changes). */
const AGENT_CHANGES = new Set<string>(["agent.tags.updated", "agent.rejected", "agent.removed"] satisfies EventType[]);

/**
 * The gateway's registry. The auth service's revocation broadcast reaches every replica and comes in
 * through the token cache's subscription (`onRevocation`); agent changes come from the audit
 * service's live feed (stored events, published to every gateway), so a retag is heard once it is
 * committed. Core NATS delivers at most once, so after a reconnect (`onRevocation(undefined)`) every
 * binding is re-validated, its reach included, and every `revalidateMs` too, bounding how long a
 * lost broadcast (or an audit service that is down) can go unnoticed (the token cache's TTL for
 * HTTP calls).
 */
export function startLiveSessions(deps: {
  nc: NatsConnection;
  clock: Clock;
  log: Logger;
  timeoutMs: number;
  revalidateMs: number;
}) {
  const auth = rpcClient(deps.nc, "auth", AuthService, { timeoutMs: deps.timeoutMs });
  const verify = async (cred: Credential): Promise<Verdict> => {
    try {
      if (cred.token) {
        const p = await auth.authenticate({ token: cred.token });
        return p.operator?.id === cred.operatorId ? "valid" : "invalid";
      }
      await auth.getOperator({ id: cred.operatorId });
      return "valid";
    } catch (err) {
      const code = err instanceof OrchError ? err.code : "";
      if (code === "UNAUTHENTICATED" || code === "NOT_FOUND") return "invalid";
      deps.log.warn({ err: (err as Error).message }, "could not re-validate a live connection; retrying");
      return "unknown";
    }
  };
  const agents = rpcClient(deps.nc, "agents", AgentsService, { timeoutMs: deps.timeoutMs });
  // The agents service answers a scoped operator's request about an agent outside its scope (or one
  // that is gone) with NOT_FOUND: the same rule (kit scope.ts) and answer as the operator's own calls.
  const reach = async (operatorId: string, nodeIds: readonly string[]): Promise<Reach> => {
    try {
      const op = await auth.getOperator({ id: operatorId });
      // With its just-in-time grants (docs/approvals.md): a grant that ends narrows the reach here.
      const role = op.effectiveRole || op.role;
      const scope = role === "admin" ? "" : op.effectiveRole ? op.effectiveAgentSelector : op.agentSelector;
      if (!scope) return { verdict: "in", scope };
      const actor: Actor = { id: op.id, name: op.name, type: "operator", role, scope };
      for (const id of nodeIds) {
        try {
          await agents.getAgent({ id }, { actor });
        } catch (err) {
          if (err instanceof OrchError && err.code === "NOT_FOUND") return { verdict: "out", scope };
          throw err;
        }
      }
      return { verdict: "in", scope };
    } catch (err) {
      // The operator is gone: its credential check ends the connection as operator_revoked.
      if (err instanceof OrchError && err.code === "NOT_FOUND") return { verdict: "in", scope: "" };
      deps.log.warn({ err: (err as Error).message }, "could not re-check a live connection's scope; retrying");
      return { verdict: "unknown" };
    }
  };
  const live = createLiveSessions({ clock: deps.clock, log: deps.log, verify, reach });
  const periodic = setInterval(() => void live.revalidateAll(), deps.revalidateMs);
  periodic.unref();
  const feed = deps.nc.subscribe(AUDIT_FEED_SUBJECT, {
    callback: (err, msg) => {
      // The feed carries every stored event: decoded only while a connection concerns agents.
      if (err || !live.watchesAgents()) return;
      try {
        for (const { event } of fromBinary(AuditFeedSchema, msg.data).events) {
          if (event && AGENT_CHANGES.has(event.eventType) && event.target?.id) live.agentChanged(event.target.id);
        }
      } catch (e) {
        deps.log.debug({ err: (e as Error).message }, "undecodable audit feed message");
      }
    },
  });

  return {
    ...live,
    /** For the token cache's revocation subscription: a revocation, or undefined when one may have been missed. */
    onRevocation(r: Revocation | undefined): void {
      if (r) live.revoke(r);
      else void live.revalidateAll();
    },
    stop() {
      clearInterval(periodic);
      feed.unsubscribe();
      live.stop();
    },
  };
}
export type GatewayLiveSessions = ReturnType<typeof startLiveSessions>;
