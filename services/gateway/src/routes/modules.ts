import { z } from "zod";
import { StateService, type Module } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { declaredSize, streamOf } from "./blob-upload.js";
import { readBundle } from "./module-bundle.js";
import { ModuleDetailOut, ModuleFilesOut, ModuleOut, moduleFilesJson, moduleJson } from "./modules-json.js";
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
      method: "PUT",
      path: "/api/v1/modules/{name}/bundle",
      auth: "operator",
      summary: "Upload a module bundle (module.yaml and files/, as tar, tar.gz or zip), streamed",
      description: [
        "The body is the archive (any content type): `module.yaml` and `files/` at its root or under one top-level directory.",
        "Each file under `files/` is stored as a blob (as `PUT /api/v1/blobs/{digest}` would) and resources name it `source: files/<path>`; other entries are ignored.",
        "Refused with nothing stored as a module: an archive that is not tar, tar.gz or zip or is corrupt, an entry with an absolute or `..` path, a symlink out of the tree, a device file, more than 1 GiB compressed or expanded, or an expansion of more than 100 times (a zip bomb).",
        "module.yaml is checked exactly as `POST /api/v1/modules` checks content, with its YAML line; replaces a module of the same name.",
      ].join(" "),
      tags: ["modules"],
      params: ModuleName,
      streamBody: true,
      responses: { 201: ModuleFilesOut },
      errors: {
        400: [
          "invalid_bundle",
          "unsafe_bundle_path",
          "unknown_bundle_file",
          "invalid_yaml",
          "invalid_module",
          "name_mismatch",
          "unknown_resource_type",
          "invalid_template",
          "module_too_large",
        ],
        409: ["module_breaks_assignments"],
        413: ["bundle_too_large"],
      },
      async handler({ params, body, call, raw }, reply) {
        reply.header("connection", "close");
        const bundle = await readBundle(state, streamOf(body), declaredSize(raw.raw), {
          timeoutMs: ctx.timeoutMs,
          call,
        });
        reply.removeHeader("connection"); // the body was read to its end
        const files = bundle.files.map((f) => ({ path: f.path, digest: f.digest, size: BigInt(f.size) }));
        const m = await state.uploadModule({ name: params.name, content: bundle.content, files }, call);
        return reply.code(201).send(moduleFilesJson(m));
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
        return { ...moduleFilesJson(m), content: m.content };
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
