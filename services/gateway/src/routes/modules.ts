import { z } from "zod";
import { StateService, type Module } from "@orch/contracts";
import { rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { declaredSize, streamOf } from "./blob-upload.js";
import { readBundle } from "./module-bundle.js";
import { ModuleDetailOut, ModuleFilesOut, ModuleOut, moduleFilesJson, moduleJson } from "./modules-json.js";
import {
  approvalOf,
  CATALOG_APPROVAL_ERRORS,
  CATALOG_APPROVAL_NOTE,
  CatalogApprovalQuery,
  catalogApprovalFields,
  HeldOut,
  ModuleName,
  NAME,
  sentHeld,
} from "./modules-schemas.js";

type StateClient = Client<typeof StateService>;

export function moduleRoutes(ctx: GatewayContext) {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  return [...moduleWriteRoutes(state, ctx.timeoutMs), ...moduleReadRoutes(state)];
}

function moduleReadRoutes(state: StateClient) {
  return [
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
  ];
}

function moduleWriteRoutes(state: StateClient, timeoutMs: number) {
  return [
    route({
      method: "POST",
      path: "/api/v1/modules",
      auth: "operator",
      summary: "Upload a module (YAML schema v1); replaces a module of the same name",
      description: `Invalid content is refused with 400 and the YAML path and line of the problem (\`path\`, \`line\`, \`column\` in the problem body). Content is limited to 256 KiB. ${CATALOG_APPROVAL_NOTE}`,
      tags: ["modules"],
      body: z.object({
        name: NAME,
        content: z.string().describe("raw YAML, at most 256 KiB"),
        ...catalogApprovalFields,
      }),
      responses: { 201: ModuleOut, 202: HeldOut },
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
          ...CATALOG_APPROVAL_ERRORS[400],
        ],
        403: [...CATALOG_APPROVAL_ERRORS[403]],
        409: ["module_breaks_assignments"],
      },
      async handler({ body, call }, reply) {
        const m = await state.uploadModule({ name: body.name, content: body.content, ...approvalOf(body) }, call);
        return sentHeld(reply, m.held) || moduleJson(m);
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
        `${CATALOG_APPROVAL_NOTE} Here \`reason\` and \`break_glass\` are query parameters (the body is the archive); a held bundle's blobs are kept until it runs (at most 30 days).`,
      ].join(" "),
      tags: ["modules"],
      params: ModuleName,
      query: CatalogApprovalQuery,
      streamBody: true,
      responses: { 201: ModuleFilesOut, 202: HeldOut },
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
          ...CATALOG_APPROVAL_ERRORS[400],
        ],
        403: [...CATALOG_APPROVAL_ERRORS[403]],
        409: ["module_breaks_assignments"],
        413: ["bundle_too_large"],
      },
      async handler({ params, query, body, call, raw }, reply) {
        reply.header("connection", "close");
        const bundle = await readBundle(state, streamOf(body), declaredSize(raw.raw), {
          timeoutMs,
          call,
        });
        reply.removeHeader("connection"); // the body was read to its end
        const files = bundle.files.map((f) => ({ path: f.path, digest: f.digest, size: BigInt(f.size) }));
        const m = await state.uploadModule(
          { name: params.name, content: bundle.content, files, ...approvalOf(query) },
          call,
        );
        return sentHeld(reply, m.held) || reply.code(201).send(moduleFilesJson(m));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/modules/{name}",
      auth: "operator",
      summary: "Delete a module no assignment uses",
      description: CATALOG_APPROVAL_NOTE,
      tags: ["modules"],
      params: ModuleName,
      query: CatalogApprovalQuery,
      responses: { 204: null, 202: HeldOut },
      errors: { ...CATALOG_APPROVAL_ERRORS, 404: ["module_not_found"], 409: ["module_in_use"] },
      async handler({ params, query, call }, reply) {
        const held = await state.deleteModule({ name: params.name, ...approvalOf(query) }, call);
        // Sent here: the first 2xx of `responses` (by number) is 202, not the 204 of a done delete.
        return sentHeld(reply, held) || reply.code(204).send();
      },
    }),
  ];
}
