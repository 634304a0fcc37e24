import { forbidden, type CallContext } from "@orch/kit";

/** Terminal sessions and their passes belong to an operator: a service or system caller has none. */
export function requireOperator(ctx: CallContext) {
  if (ctx.actor.type !== "operator") throw forbidden("operator_required", "terminal sessions belong to an operator");
}
