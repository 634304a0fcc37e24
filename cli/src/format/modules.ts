/** State modules as table rows, fields and the upload confirmation (pure). */
import type { ModuleInfo, ModulePage } from "@orch/client";
import { isoSeconds } from "./time.js";
import { count } from "./units.js";

/** The uploader's name, which the API sends next to the id (the id when the name is empty). */
const uploadedBy = (m: Pick<ModuleInfo, "uploaded_by" | "uploaded_by_name">) => m.uploaded_by_name || m.uploaded_by;

export const MODULE_COLUMNS = ["NAME", "RESOURCES", "UPLOADED", "BY", "DESCRIPTION"];

export function moduleRows(modules: ModulePage["modules"]): unknown[][] {
  return modules.map((m) => [m.name, m.resource_count, isoSeconds(m.uploaded_at), uploadedBy(m), m.description]);
}

export function moduleFields(m: ModuleInfo): [string, unknown][] {
  return [
    ["name", m.name],
    ["description", m.description],
    ["resources", m.resource_count],
    ["uploaded_at", isoSeconds(m.uploaded_at)],
    ["uploaded_by", uploadedBy(m)],
    ["sha256", m.sha256],
    ...(m.files.length ? ([["files", m.files.length]] as [string, unknown][]) : []),
  ];
}

/** A bundle's files, one line each: path, size, digest (empty for a YAML module). */
export const moduleFileLines = (m: Pick<ModuleInfo, "files">) =>
  m.files.map((f) => `${f.path}  ${f.size} bytes  ${f.digest}`);

/** The module's YAML as one block without its final newline. */
export const moduleContent = (m: ModuleInfo) => (m.content ?? "").replace(/\n$/, "");

export const uploadedLine = (m: Pick<ModuleInfo, "name" | "resource_count" | "sha256">) =>
  `Uploaded module ${m.name} (${count(m.resource_count, "resource")}, sha256 ${m.sha256.slice(0, 12)})`;
