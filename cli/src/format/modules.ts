/** State modules as table rows, fields and the upload confirmation (pure). */
import type { ModuleInfo, ModulePage } from "@orch/client";
import { isoSeconds } from "./time.js";

export const MODULE_COLUMNS = ["NAME", "RESOURCES", "UPLOADED", "BY", "DESCRIPTION"];

export function moduleRows(modules: ModulePage["modules"]): unknown[][] {
  return modules.map((m) => [m.name, m.resource_count, isoSeconds(m.uploaded_at), m.uploaded_by, m.description]);
}

export function moduleFields(m: ModuleInfo): [string, unknown][] {
  return [
    ["name", m.name],
    ["description", m.description],
    ["resources", m.resource_count],
    ["uploaded_at", isoSeconds(m.uploaded_at)],
    ["uploaded_by", m.uploaded_by],
    ["sha256", m.sha256],
  ];
}

/** The module's YAML as one block without its final newline. */
export const moduleContent = (m: ModuleInfo) => (m.content ?? "").replace(/\n$/, "");

export const uploadedLine = (m: Pick<ModuleInfo, "name" | "resource_count" | "sha256">) =>
  `Uploaded module ${m.name} (${m.resource_count} resource${m.resource_count === 1 ? "" : "s"}, sha256 ${m.sha256.slice(0, 12)})`;
