import { forbidden, type CallContext } from "@orch/kit";

// The gateway enforces roles; the service checks again so a bus caller cannot skip it.
export function requireAdmin(ctx: CallContext): void {
  if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
}
