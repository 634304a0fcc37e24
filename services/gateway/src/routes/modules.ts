import { z } from "zod";
import { StateService, type Module } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { ModuleDetailOut, ModuleOut, moduleJson } from "./modules-json.js";
import { ModuleName, NAME } from "./modules-schemas.js";

export function moduleRoutes(ctx: GatewayContext) {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "POST",
      path: "/api/v1/modules",
      auth: "operator",
      summary: "Upload a module (YAML schema v1); replaces a module of the same name",
      description:
        "Invalid content is refused with 400 and the YAML path and line of the problem (`path`, `line`, `column` in the problem body). Content is limited to 256 KiB.",
      tags: ["modules"],
      body: z.object({ name: NAME, content: z.string().describe("raw YAML, at most 256 KiB") }),
      responses: { 201: ModuleOut },
      errors: {
        400: [
          "invalid_yaml",
          "invalid_module",
          "name_mismatch",
          "unknown_resource_type",
          "duplicate_resource_id",
          "unknown_requirement",
          "cyclic_requires",
          "invalid_template",
          "module_too_large",
          "secret_in_argument",
          "secret_in_path",
        ],
        409: ["module_breaks_assignments"],
      },
      async handler({ body, call }) {
        return moduleJson(await state.uploadModule({ name: body.name, content: body.content }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/modules",
      auth: "operator",
      summary: "List modules by name",
      tags: ["modules"],
      query: pageQuery,
      responses: {
        200: z.object({ modules: z.array(ModuleOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      async handler({ query, call }) {
        const r = await state.listModules({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return { modules: r.modules.map(moduleJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/modules/{name}",
      auth: "operator",
      summary: "Module details with its YAML content",
      tags: ["modules"],
      params: ModuleName,
      responses: { 200: ModuleDetailOut },
      errors: { 404: ["module_not_found"] },
      async handler({ params, call }) {
        const m: Module = await state.getModule({ name: params.name }, call);
        return { ...moduleJson(m), content: m.content };
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/modules/{name}",
      auth: "operator",
      summary: "Delete a module no assignment uses",
      tags: ["modules"],
      params: ModuleName,
      responses: { 204: null },
      errors: { 404: ["module_not_found"], 409: ["module_in_use"] },
      async handler({ params, call }) {
        await state.deleteModule({ name: params.name }, call);
      },
    }),
  ];
}
