import { z } from "zod";
import { int64 } from "../schemas.js";
import type { Module } from "@orch/contracts";

// API shapes: a module's `uploaded_at` is an integer of Unix seconds (docs/modules.md#times-in-the-api).
export const ModuleOut = z.object({
  name: z.string(),
  uploaded_at: int64().describe("Unix seconds, UTC"),
  uploaded_by: z.string().describe("id of the uploading operator"),
  uploaded_by_name: z.string().describe("name of the uploading operator"),
  description: z.string(),
  resource_count: z.number().int(),
  sha256: z.string(),
  source: z.string().nullable().describe("the git source managing the module (docs/sources.md); null when uploaded"),
  commit: z.string().nullable().describe("the source's commit the content came from"),
  removed_from_source: z
    .boolean()
    .describe("its file left the source while assignments still use it; deleted once none does"),
});
export const ModuleFileOut = z.object({
  path: z.string().describe("files/<path>, as a resource's `source:` names it"),
  digest: z.string().describe("the blob holding its bytes, sha256:<64 hex>"),
  size: int64().describe("bytes"),
});
/** A module with its bundle's files (empty for a module uploaded as YAML). */
export const ModuleFilesOut = ModuleOut.extend({
  files: z.array(ModuleFileOut).describe("the bundle's files (docs/modules.md#bundles); empty for a YAML upload"),
});
export const ModuleDetailOut = ModuleFilesOut.extend({ content: z.string() });

export const moduleFilesJson = (m: Module) => ({
  ...moduleJson(m),
  files: m.files.map((f) => ({ path: f.path, digest: f.digest, size: Number(f.size) })),
});

export const moduleJson = (m: Module) => ({
  name: m.name,
  uploaded_at: Math.floor(m.uploadedAt / 1000),
  uploaded_by: m.uploadedBy,
  uploaded_by_name: m.uploadedByName,
  description: m.description,
  resource_count: m.resourceCount,
  sha256: m.sha256,
  source: m.source || null,
  commit: m.commit || null,
  removed_from_source: m.removedFromSource,
});
