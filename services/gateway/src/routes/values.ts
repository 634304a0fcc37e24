import { z } from "zod";
import type { JsonObject } from "@bufbuild/protobuf";
import { StateService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { AgentParams } from "./agents-schemas.js";
import { NAME } from "./modules-schemas.js";
import {
  AgentValuesOut,
  ValueSetDetailOut,
  ValueSetOut,
  agentValuesJson,
  valueSetDetailJson,
  valueSetJson,
} from "./values-json.js";
import { AgentValuesBody, VALUE_ERRORS, ValueSetBody, ValueSetName, valueSetMsg } from "./values-schemas.js";

/**
 * Values (docs/modules.md#values): value sets, readable by any operator and changed by unscoped
 * operators (a set reaches every agent its selector matches), and each agent's own values and
 * merged result, scoped like every /agents/{node_id} route.
 */
export function valueRoutes(ctx: GatewayContext) {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "GET",
      path: "/api/v1/values",
      auth: "operator",
      summary: "List value sets by name",
      tags: ["values"],
      query: pageQuery,
      responses: {
        200: z.object({ sets: z.array(ValueSetOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      async handler({ query, call }) {
        const r = await state.listValueSets({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return { sets: r.sets.map(valueSetJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/values/{name}",
      auth: "operator",
      summary: "A value set with its values and YAML text",
      tags: ["values"],
      params: ValueSetName,
      responses: { 200: ValueSetDetailOut },
      errors: { 404: ["value_set_not_found"] },
      async handler({ params, call }) {
        return valueSetDetailJson(await state.getValueSet({ name: params.name }, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/values/{name}",
      auth: "operator",
      summary: "Create or replace a value set",
      description:
        "The set named `defaults` takes no selector and is the lowest layer; every other set needs a selector and is ordered by `priority` (higher wins; equal priorities by name, the later name wins). Values may not hold `{{ secrets.… }}`. Refused input is 400 with the YAML `line` and `path`; nothing is stored.",
      tags: ["values"],
      params: z.object({ name: NAME }),
      body: ValueSetBody,
      responses: { 200: ValueSetDetailOut },
      errors: {
        400: [...VALUE_ERRORS, "invalid_request", "invalid_selector"],
        403: ["value_set_scoped_operator"],
        409: ["managed_by_source"],
      },
      async handler({ params, body, call }) {
        return valueSetDetailJson(await state.putValueSet(valueSetMsg(params.name, body), call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/values/{name}",
      auth: "operator",
      summary: "Delete a value set",
      tags: ["values"],
      params: ValueSetName,
      responses: { 204: null },
      errors: { 403: ["value_set_scoped_operator"], 404: ["value_set_not_found"], 409: ["managed_by_source"] },
      async handler({ params, call }) {
        await state.deleteValueSet({ name: params.name }, call);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/values",
      auth: "operator",
      summary: "An agent's merged values with the origin of every key",
      description:
        "Layers, lowest first: `defaults`, the sets whose selector matches the agent (ascending priority, then name), the agent's own values. Maps merge; lists and scalars replace. Each leaf key path names its winning set and line and what it overrode.",
      tags: ["values"],
      params: AgentParams,
      responses: { 200: AgentValuesOut },
      errors: { 404: ["agent_not_found"] },
      async handler({ params, call }) {
        return agentValuesJson(await state.getAgentValues({ nodeId: params.node_id }, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/agents/{node_id}/values",
      auth: "operator",
      summary: "Replace an agent's own values (the highest layer); {} clears them",
      tags: ["values"],
      params: AgentParams,
      body: AgentValuesBody,
      responses: { 200: AgentValuesOut },
      errors: { 400: [...VALUE_ERRORS], 404: ["agent_not_found"] },
      async handler({ params, body, call }) {
        const r = await state.setAgentValues(
          {
            nodeId: params.node_id,
            ...(body.values !== undefined ? { values: body.values as JsonObject } : {}),
            content: body.content ?? "",
          },
          call,
        );
        return agentValuesJson(r);
      },
    }),
  ];
}
