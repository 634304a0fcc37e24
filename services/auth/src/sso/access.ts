// Changes to an SSO operator's access, inside the caller's transaction; the caller broadcasts the
// revocation after the commit so gateways never act on a change that was rolled back.
import { create, toBinary } from "@bufbuild/protobuf";
import { RevocationSchema } from "@orch/contracts";
import { SYSTEM_ACTOR, type Emit, type NatsConnection, type Queryable } from "@orch/kit";
import { sessionsDb } from "../db/sessions.js";
import { REVOCATION_SUBJECT } from "../handlers/login.js";

export type DeprovisionReason =
  | "refresh_refused"
  | "mapping_refused"
  | "provider_unreachable"
  | "no_refresh_token"
  | "provider_deleted";

/** Deactivates the operator and ends its sessions; its record and SSO identity stay for the audit trail. */
export async function deprovision(
  db: Queryable,
  emit: Emit,
  o: { id: string; name: string },
  meta: { provider: string; reason: DeprovisionReason; detail?: string },
): Promise<number> {
  await db.query("UPDATE operators SET active = false WHERE id = $1", [o.id]);
  const sessions = await sessionsDb.removeOperatorTokens(db, o.id);
  await emit({
    type: "operator.deprovisioned",
    summary: `operator ${o.name} deprovisioned (${meta.reason.replaceAll("_", " ")} at ${meta.provider})`,
    actor: SYSTEM_ACTOR,
    target: { id: o.id, name: o.name, type: "operator" },
    metadata: {
      provider: meta.provider,
      reason: meta.reason,
      sessions_ended: sessions,
      ...(meta.detail ? { detail: meta.detail } : {}),
    },
  });
  return sessions;
}

/**
 * Tells every gateway: `scopeChanged` re-checks the operator's streams and terminals against its new
 * scope (its tokens stay); otherwise its cached sessions and live connections end.
 */
export function publishRevocation(nc: Pick<NatsConnection, "publish">, operatorId: string, scopeChanged = false) {
  const revocation = create(RevocationSchema, { operatorId, scopeChanged });
  nc.publish(REVOCATION_SUBJECT, toBinary(RevocationSchema, revocation));
}

export interface AccessChange {
  role: "admin" | "operator";
  agentSelector: string | null;
}

/** Sets role and scope (and re-activates); returns whether role or scope differ from before. */
export async function setAccess(
  db: Queryable,
  o: { id: string; role: string; agent_selector: string | null; active?: boolean },
  next: AccessChange,
): Promise<boolean> {
  const changed = o.role !== next.role || (o.agent_selector ?? null) !== next.agentSelector;
  if (changed || o.active === false) {
    await db.query("UPDATE operators SET role = $2, agent_selector = $3, active = true WHERE id = $1", [
      o.id,
      next.role,
      next.agentSelector,
    ]);
  }
  return changed;
}
