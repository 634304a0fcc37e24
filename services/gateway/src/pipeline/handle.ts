import type { FastifyReply, FastifyRequest } from "fastify";
import type { CallOptions } from "@orch/kit";
import type { RouteSpec } from "../route.js";
import type { ParsedInput } from "./parse.js";

/** Calls the route's handler with its parsed input, the principal and the options for its RPCs. */
export function handle(
  spec: RouteSpec,
  req: FastifyRequest,
  reply: FastifyReply,
  input: ParsedInput,
  idem: Pick<CallOptions, "idempotency">,
): Promise<unknown> {
  const p = req.principal;
  return spec.handler(
    {
      ...input,
      principal: p,
      raw: req,
      call: {
        requestId: req.id,
        ...(p ? { actor: { id: p.id, name: p.name, type: "operator", role: p.role, scope: p.scope } } : {}),
        ...idem,
      },
    },
    reply,
  );
}
