import { forbidden, type CallContext } from "@orch/kit";

// The gateway enforces roles; the service checks again so a bus caller cannot skip it.
export function requireAdmin(ctx: CallContext): void {
  if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
}

/** Notifications belong to an operator: the caller must be one. */
export function requireOperator(ctx: CallContext): string {
  if (ctx.actor.type !== "operator" || !ctx.actor.id)
    throw forbidden("operator_required", "notifications belong to an operator; call as one");
  return ctx.actor.id;
}
